package keys

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha512"
	"fmt"
)

// PublisherPublic is a release publisher's public key: it verifies statement envelopes and key-chain
// links.
type PublisherPublic struct{ edPublic }

// PublisherPrivate is a release publisher's signing key.
type PublisherPrivate struct {
	_ [0]func()
	k ed25519.PrivateKey
}

// NewPublisher makes a fresh publisher key.
func NewPublisher() PublisherPrivate {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("keys: no randomness: %v", err)) // crypto/rand does not fail on Linux
	}
	return PublisherPrivate{k: k}
}

// ParsePublisherPublic reads a "publisher-key:" text form.
func ParsePublisherPublic(s string) (PublisherPublic, error) {
	p, err := parseEdPublic(s, publisherPublicPrefix)
	return PublisherPublic{p}, err
}

// ParsePublisherPrivate reads a "publisher-private:" text form.
func ParsePublisherPrivate(s string) (PublisherPrivate, error) {
	k, err := parseEdPrivate(s, publisherPrivatePrefix)
	return PublisherPrivate{k: k}, err
}

func (p PublisherPublic) String() string               { return publisherPublicPrefix + b64.EncodeToString(p.k[:]) }
func (p PublisherPublic) Equal(o PublisherPublic) bool { return p.equal(o.edPublic) }
func (p PublisherPublic) IsZero() bool                 { return p.isZero() }

// Fingerprint is the key's id in bundles, key chains and messages: OpenSSH's SHA256 form.
func (p PublisherPublic) Fingerprint() string { return p.fingerprint() }

// Ed25519 returns the raw key, for libraries that need it (sigstore-go).
func (p PublisherPublic) Ed25519() ed25519.PublicKey { return p.ed() }

// VerifyPH checks an Ed25519ph signature (SHA-512 prehash) over message. Statements are signed in the
// prehash mode because Rekor v2's hashedrekord entries require a prehashed signature.
func (p PublisherPublic) VerifyPH(message, sig []byte) bool {
	d := sha512.Sum512(message)
	return ed25519.VerifyWithOptions(p.ed(), d[:], sig, &ed25519.Options{Hash: crypto.SHA512}) == nil
}

// MarshalText and UnmarshalText let the key travel in JSON as its text form.
func (p PublisherPublic) MarshalText() ([]byte, error) { return []byte(p.String()), nil }
func (p *PublisherPublic) UnmarshalText(b []byte) error {
	k, err := ParsePublisherPublic(string(b))
	*p = k
	return err
}

// Public returns the matching public key.
func (k PublisherPrivate) Public() PublisherPublic {
	var p PublisherPublic
	copy(p.k[:], k.k.Public().(ed25519.PublicKey))
	return p
}

// String is the key's secret text form; it exists for writing the key file and nothing else.
func (k PublisherPrivate) String() string {
	return publisherPrivatePrefix + b64.EncodeToString(k.k.Seed())
}

// IsZero reports whether k holds no key.
func (k PublisherPrivate) IsZero() bool { return len(k.k) == 0 }

// SignPH signs message in Ed25519ph mode and returns the signature and the SHA-512 digest signed.
func (k PublisherPrivate) SignPH(message []byte) (sig, digest []byte) {
	d := sha512.Sum512(message)
	sig, err := k.k.Sign(nil, d[:], crypto.SHA512)
	if err != nil {
		panic(fmt.Sprintf("keys: ed25519ph sign: %v", err)) // only fails on a wrong digest length
	}
	return sig, d[:]
}

// Signer exposes the key as a crypto.Signer, for libraries that take one.
func (k PublisherPrivate) Signer() crypto.Signer { return k.k }
