package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Sizes of the publisher key bodies. A 32-byte public body is an Ed25519 key, the publisher key type
// before ECDSA P-256; it is refused with key.algorithm_retired rather than read as garbage.
const (
	publisherPublicSize = 33 // compressed SEC 1 point on P-256
	retiredPublicSize   = 32 // Ed25519
	retiredPrivateSize  = 32 // Ed25519 seed
)

// PublisherPublic is a release publisher's public key, ECDSA P-256: it verifies statement envelopes and
// key-chain links. Its text body is the compressed point, so the text stays as short as an Ed25519 key's.
type PublisherPublic struct {
	_ [0]func()
	k [publisherPublicSize]byte
}

// PublisherPrivate is a release publisher's signing key.
type PublisherPrivate struct {
	_ [0]func()
	k *ecdsa.PrivateKey
}

// NewPublisher makes a fresh publisher key.
func NewPublisher() PublisherPrivate {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("keys: no randomness: %v", err)) // crypto/rand does not fail on Linux
	}
	return PublisherPrivate{k: k}
}

// ParsePublisherPublic reads a "publisher-key:" text form.
func ParsePublisherPublic(s string) (PublisherPublic, error) {
	var p PublisherPublic
	body, ok := strings.CutPrefix(strings.TrimSpace(s), publisherPublicPrefix)
	if !ok {
		return p, errcode.New(errcode.KeyMalformed, "key does not start with %q", publisherPublicPrefix)
	}
	raw, ok := decodeCanonical(b64, body)
	switch {
	case ok && len(raw) == retiredPublicSize:
		return p, retiredAlgorithm("public")
	case !ok || len(raw) != publisherPublicSize:
		return p, errcode.New(errcode.KeyMalformed, "publisher key body is not a %d-byte compressed P-256 point in canonical base64url", publisherPublicSize)
	}
	if x, _ := elliptic.UnmarshalCompressed(elliptic.P256(), raw); x == nil {
		return p, errcode.New(errcode.KeyMalformed, "publisher key body is not a point on P-256")
	}
	copy(p.k[:], raw)
	return p, nil
}

func retiredAlgorithm(which string) error {
	return errcode.New(errcode.KeyAlgorithmRetired,
		"this %s publisher key is Ed25519, which publisher keys no longer are: make a P-256 key with `lexicon-release keygen` and hand nodes the new public key", which)
}

// NewPublisherPublic wraps an ECDSA P-256 public key.
func NewPublisherPublic(pub *ecdsa.PublicKey) (PublisherPublic, error) {
	var p PublisherPublic
	if pub == nil || pub.Curve != elliptic.P256() {
		return p, errcode.New(errcode.KeyMalformed, "publisher keys are ECDSA P-256")
	}
	raw, err := pub.Bytes() // uncompressed: 0x04 || X || Y
	if err != nil {
		return p, errcode.Wrap(err, errcode.KeyMalformed, "publisher key is not a valid P-256 point")
	}
	p.k[0] = 0x02 | raw[len(raw)-1]&1
	copy(p.k[1:], raw[1:33])
	return p, nil
}

func (p PublisherPublic) String() string { return publisherPublicPrefix + b64.EncodeToString(p.k[:]) }

// Equal compares two keys in constant time.
func (p PublisherPublic) Equal(o PublisherPublic) bool {
	return subtle.ConstantTimeCompare(p.k[:], o.k[:]) == 1
}

func (p PublisherPublic) IsZero() bool { return p.k == [publisherPublicSize]byte{} }

// ECDSA returns the key for libraries that need it (sigstore-go, cosign's PEM). A zero key returns nil.
func (p PublisherPublic) ECDSA() *ecdsa.PublicKey {
	x, y := elliptic.UnmarshalCompressed(elliptic.P256(), p.k[:])
	if x == nil {
		return nil
	}
	raw := make([]byte, 65)
	raw[0] = 0x04
	x.FillBytes(raw[1:33])
	y.FillBytes(raw[33:])
	k, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return nil
	}
	return k
}

// Fingerprint is the key's id in bundles, key chains and messages: OpenSSH's SHA256 form, so
// `ssh-keygen -lf` on the key's PEM (ssh-keygen -i -m PKCS8) prints the same.
func (p PublisherPublic) Fingerprint() string {
	k := p.ECDSA()
	if k == nil {
		return ""
	}
	pk, err := ssh.NewPublicKey(k)
	if err != nil {
		return ""
	}
	return ssh.FingerprintSHA256(pk)
}

// PEM is the key as a PKIX "PUBLIC KEY" block: the form cosign, sigstore-js and openssl read.
func (p PublisherPublic) PEM() []byte {
	der, err := x509.MarshalPKIXPublicKey(p.ECDSA())
	if err != nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Verify checks an ECDSA P-256 signature (ASN.1 DER) over the SHA-256 of message.
func (p PublisherPublic) Verify(message, sig []byte) bool {
	k := p.ECDSA()
	if k == nil {
		return false
	}
	d := sha256.Sum256(message)
	return ecdsa.VerifyASN1(k, d[:], sig)
}

// MarshalText and UnmarshalText let the key travel in JSON as its text form.
func (p PublisherPublic) MarshalText() ([]byte, error) { return []byte(p.String()), nil }
func (p *PublisherPublic) UnmarshalText(b []byte) error {
	k, err := ParsePublisherPublic(string(b))
	*p = k
	return err
}

// ParsePublisherPrivate reads a "publisher-private:" text form: the key's PKCS #8 DER in base64url, so
// `openssl pkey -inform DER` reads the decoded body as it is.
func ParsePublisherPrivate(s string) (PublisherPrivate, error) {
	body, ok := strings.CutPrefix(strings.TrimSpace(s), publisherPrivatePrefix)
	if !ok {
		return PublisherPrivate{}, errcode.New(errcode.KeyMalformed, "private key does not start with %q", publisherPrivatePrefix)
	}
	raw, ok := decodeCanonical(b64, body)
	if ok && len(raw) == retiredPrivateSize {
		return PublisherPrivate{}, retiredAlgorithm("private")
	}
	if !ok {
		return PublisherPrivate{}, errcode.New(errcode.KeyMalformed, "publisher private key body is not canonical base64url")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(raw)
	if err != nil {
		return PublisherPrivate{}, errcode.New(errcode.KeyMalformed, "publisher private key body is not PKCS #8")
	}
	k, isEC := parsed.(*ecdsa.PrivateKey)
	if !isEC || k.Curve != elliptic.P256() {
		return PublisherPrivate{}, errcode.New(errcode.KeyMalformed, "publisher private keys are ECDSA P-256")
	}
	// One text per key: DER admits other encodings of the same key (optional fields, a public key
	// present or not), so the body must be exactly what encoding the key gives.
	if again, err := x509.MarshalPKCS8PrivateKey(k); err != nil || subtle.ConstantTimeCompare(again, raw) != 1 {
		return PublisherPrivate{}, errcode.New(errcode.KeyMalformed, "publisher private key body is not the canonical PKCS #8 of its key")
	}
	return PublisherPrivate{k: k}, nil
}

// Public returns the matching public key.
func (k PublisherPrivate) Public() PublisherPublic {
	p, _ := NewPublisherPublic(&k.k.PublicKey) // a P-256 key by construction
	return p
}

// String is the key's secret text form; it exists for writing the key file and nothing else.
func (k PublisherPrivate) String() string {
	der, err := x509.MarshalPKCS8PrivateKey(k.k)
	if err != nil {
		return ""
	}
	return publisherPrivatePrefix + b64.EncodeToString(der)
}

// IsZero reports whether k holds no key.
func (k PublisherPrivate) IsZero() bool { return k.k == nil }

// Sign signs the SHA-256 of message with ECDSA P-256 and returns the ASN.1 DER signature and the
// digest signed: a Rekor v2 entry records that digest, and standard Sigstore verifiers check a DSSE
// envelope's signature this way.
func (k PublisherPrivate) Sign(message []byte) (sig, digest []byte) {
	d := sha256.Sum256(message)
	sig, err := ecdsa.SignASN1(rand.Reader, k.k, d[:])
	if err != nil {
		panic(fmt.Sprintf("keys: ecdsa sign: %v", err)) // only fails without randomness
	}
	return sig, d[:]
}

// Signer exposes the key as a crypto.Signer, for libraries that take one.
func (k PublisherPrivate) Signer() crypto.Signer { return k.k }
