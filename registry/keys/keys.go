// Package keys defines Lexicon's key types and the files that hold them.
//
// Publisher keys sign release statements, node keys sign channel requests, log keys sign
// transparency-log checkpoints, and witness keys cosign them. Each is its own Go type with its own
// text prefix, so a node key can never be passed where a publisher key is expected, in code or in a
// file:
//
//	publisher-key:<base64url compressed P-256 point>   publisher-private:<base64url PKCS #8 DER>
//	node-key:<base64url Ed25519 key>                    node-private:<base64url Ed25519 seed>
//	log-key:<origin>:<base64 PKIX DER>
//	witness-key:<name>+<hash>+<base64>  (a C2SP signed-note vkey, type 0x04: Ed25519 cosignature/v1)
//
// Publisher keys are ECDSA P-256, the one algorithm that both a Rekor v2 log and every standard Sigstore
// verifier take for a DSSE envelope; node keys are Ed25519, as RFC 9421's ed25519 algorithm needs. A
// publisher key from before, Ed25519, is refused with key.algorithm_retired.
//
// Each body must be the one canonical encoding of its bytes (no stray bits after the last byte, no line
// breaks inside): a key has exactly one text, and any other spelling is key.malformed.
//
// Public keys are compared with Equal (constant time), never ==. Their fingerprint is the one OpenSSH
// prints ("SHA256:" and unpadded base64 of the SSH wire form), so an operator can check it with
// ssh-keygen -lf.
package keys

import (
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/base64"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

const (
	publisherPublicPrefix  = "publisher-key:"
	publisherPrivatePrefix = "publisher-private:"
	nodePublicPrefix       = "node-key:"
	nodePrivatePrefix      = "node-private:"
	logPublicPrefix        = "log-key:"
	witnessPublicPrefix    = "witness-key:"
)

var b64 = base64.RawURLEncoding

// edPublic is the body of the Ed25519 public key types. The zero-length func array makes the
// types incomparable, so == cannot be used by mistake where Equal is meant.
type edPublic struct {
	_ [0]func()
	k [ed25519.PublicKeySize]byte
}

func (p edPublic) equal(o edPublic) bool { return subtle.ConstantTimeCompare(p.k[:], o.k[:]) == 1 }

func (p edPublic) isZero() bool { return p.k == [ed25519.PublicKeySize]byte{} }

func (p edPublic) ed() ed25519.PublicKey { return ed25519.PublicKey(p.k[:]) }

// fingerprint is OpenSSH's SHA256 fingerprint of the key.
func (p edPublic) fingerprint() string {
	pk, err := ssh.NewPublicKey(p.ed())
	if err != nil {
		return ""
	}
	return ssh.FingerprintSHA256(pk)
}

func parseEdPublic(s, prefix string) (edPublic, error) {
	var p edPublic
	body, ok := strings.CutPrefix(strings.TrimSpace(s), prefix)
	if !ok {
		return p, errcode.New(errcode.KeyMalformed, "key does not start with %q", prefix)
	}
	raw, ok := decodeCanonical(b64, body)
	if !ok || len(raw) != ed25519.PublicKeySize {
		return p, errcode.New(errcode.KeyMalformed, "%s key body is not %d bytes in canonical base64url", strings.TrimSuffix(prefix, ":"), ed25519.PublicKeySize)
	}
	copy(p.k[:], raw)
	return p, nil
}

func parseEdPrivate(s, prefix string) (ed25519.PrivateKey, error) {
	body, ok := strings.CutPrefix(strings.TrimSpace(s), prefix)
	if !ok {
		return nil, errcode.New(errcode.KeyMalformed, "private key does not start with %q", prefix)
	}
	seed, ok := decodeCanonical(b64, body)
	if !ok || len(seed) != ed25519.SeedSize {
		return nil, errcode.New(errcode.KeyMalformed, "%s key body is not a %d-byte seed in canonical base64url", strings.TrimSuffix(prefix, ":"), ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// decodeCanonical decodes s only if it is the one text enc gives for its bytes. Go's decoders accept
// other spellings of the same bytes (non-zero bits after the last byte, CR and LF anywhere), so one key
// could be written many ways: a file that lists it twice, or a denylist by text, would not see the same
// key. Re-encoding and comparing refuses every such spelling.
func decodeCanonical(enc *base64.Encoding, s string) ([]byte, bool) {
	raw, err := enc.DecodeString(s)
	if err != nil || enc.EncodeToString(raw) != s {
		return nil, false
	}
	return raw, true
}
