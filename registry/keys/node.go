package keys

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// NodePublic is a node's public key: the identity every signed channel request proves.
type NodePublic struct{ edPublic }

// NodePrivate is a node's signing key. It lives in the agent's state dir, mode 0600, and nowhere else.
type NodePrivate struct {
	_ [0]func()
	k ed25519.PrivateKey
}

// NewNode makes a fresh node key.
func NewNode() NodePrivate {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("keys: no randomness: %v", err))
	}
	return NodePrivate{k: k}
}

// ParseNodePublic reads a "node-key:" text form.
func ParseNodePublic(s string) (NodePublic, error) {
	p, err := parseEdPublic(s, nodePublicPrefix)
	return NodePublic{p}, err
}

// ParseNodePrivate reads a "node-private:" text form.
func ParseNodePrivate(s string) (NodePrivate, error) {
	k, err := parseEdPrivate(s, nodePrivatePrefix)
	return NodePrivate{k: k}, err
}

func (p NodePublic) String() string               { return nodePublicPrefix + b64.EncodeToString(p.k[:]) }
func (p NodePublic) Equal(o NodePublic) bool      { return p.equal(o.edPublic) }
func (p NodePublic) IsZero() bool                 { return p.isZero() }
func (p NodePublic) Fingerprint() string          { return p.fingerprint() }
func (p NodePublic) Ed25519() ed25519.PublicKey   { return p.ed() }
func (p NodePublic) MarshalText() ([]byte, error) { return []byte(p.String()), nil }
func (p *NodePublic) UnmarshalText(b []byte) error {
	k, err := ParseNodePublic(string(b))
	*p = k
	return err
}

// Verify checks a pure Ed25519 signature over message.
func (p NodePublic) Verify(message, sig []byte) bool { return ed25519.Verify(p.ed(), message, sig) }

// AuthorizedKey is the key in OpenSSH authorized_keys form, so `ssh-keygen -lf` prints the same
// fingerprint the agent and the plane show.
func (p NodePublic) AuthorizedKey() string {
	pk, _ := ssh.NewPublicKey(p.ed())
	return string(ssh.MarshalAuthorizedKey(pk))
}

func (k NodePrivate) Public() NodePublic {
	var p NodePublic
	copy(p.k[:], k.k.Public().(ed25519.PublicKey))
	return p
}

// String is the key's secret text form, for the key file only.
func (k NodePrivate) String() string { return nodePrivatePrefix + b64.EncodeToString(k.k.Seed()) }
func (k NodePrivate) IsZero() bool   { return len(k.k) == 0 }

// Sign makes a pure Ed25519 signature, as RFC 9421's ed25519 algorithm requires.
func (k NodePrivate) Sign(message []byte) []byte { return ed25519.Sign(k.k, message) }
