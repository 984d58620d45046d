package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// LogPublic is a transparency log's checkpoint key and origin. Rekor v2 logs sign checkpoints with
// ECDSA P-256 or Ed25519, so both are accepted; the origin is the log's host name, which the signed
// checkpoint names.
type LogPublic struct {
	_      [0]func()
	origin string
	der    []byte // PKIX DER
	key    crypto.PublicKey
}

// NewLogPublic makes a log key from its origin and public key.
func NewLogPublic(origin string, pub crypto.PublicKey) (LogPublic, error) {
	if err := checkLogKey(origin, pub); err != nil {
		return LogPublic{}, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return LogPublic{}, errcode.Wrap(err, errcode.KeyMalformed, "log key cannot be encoded")
	}
	return LogPublic{origin: origin, der: der, key: pub}, nil
}

func checkLogKey(origin string, pub crypto.PublicKey) error {
	if origin == "" || strings.ContainsAny(origin, ": /\n") {
		return errcode.New(errcode.KeyMalformed, "log origin %q must be a host name", origin)
	}
	switch k := pub.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if k.Curve.Params().BitSize != 256 {
			return errcode.New(errcode.KeyMalformed, "log ECDSA keys must be P-256")
		}
	default:
		return errcode.New(errcode.KeyMalformed, "log keys are Ed25519 or ECDSA P-256, not %T", pub)
	}
	return nil
}

// ParseLogPublic reads a "log-key:<origin>:<base64 PKIX DER>" text form.
func ParseLogPublic(s string) (LogPublic, error) {
	body, ok := strings.CutPrefix(strings.TrimSpace(s), logPublicPrefix)
	if !ok {
		return LogPublic{}, errcode.New(errcode.KeyMalformed, "log key does not start with %q", logPublicPrefix)
	}
	origin, enc, ok := strings.Cut(body, ":")
	if !ok {
		return LogPublic{}, errcode.New(errcode.KeyMalformed, "log key needs origin:key")
	}
	der, ok := decodeCanonical(base64.StdEncoding, enc)
	if !ok {
		return LogPublic{}, errcode.New(errcode.KeyMalformed, "log key body is not canonical base64")
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return LogPublic{}, errcode.Wrap(err, errcode.KeyMalformed, "log key body is not a PKIX public key")
	}
	if err := checkLogKey(origin, pub); err != nil {
		return LogPublic{}, err
	}
	return LogPublic{origin: origin, der: der, key: pub}, nil
}

func (l LogPublic) String() string {
	return logPublicPrefix + l.origin + ":" + base64.StdEncoding.EncodeToString(l.der)
}

// Origin is the log's host name as its checkpoints name it.
func (l LogPublic) Origin() string { return l.origin }

// Key returns the checkpoint verification key.
func (l LogPublic) Key() crypto.PublicKey { return l.key }

// ID is the log id a Rekor v2 log puts in its entries, the untruncated key id of its checkpoint key:
// for ECDSA the SHA-256 of the key's PKIX DER, for Ed25519 the C2SP signed-note key hash
// SHA-256(origin || "\n" || 0x01 || key).
func (l LogPublic) ID() []byte {
	if k, ok := l.key.(ed25519.PublicKey); ok {
		h := sha256.New()
		h.Write([]byte(l.origin + "\n\x01"))
		h.Write(k)
		return h.Sum(nil)
	}
	d := sha256.Sum256(l.der)
	return d[:]
}

func (l LogPublic) IsZero() bool { return l.key == nil }
