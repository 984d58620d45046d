package httpsig

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/keys"
)

// Signer signs channel requests with one node key. It is safe for concurrent use.
type Signer struct {
	key   keys.NodePrivate
	keyID string
	now   func() time.Time
}

// NewSigner returns a Signer for key. Its keyid is KeyID(key.Public()); now is the clock for created
// (nil means time.Now).
func NewSigner(key keys.NodePrivate, now func() time.Time) *Signer {
	if now == nil {
		now = time.Now
	}
	return &Signer{key: key, keyID: KeyID(key.Public()), now: now}
}

// KeyID is the keyid a node key signs with: its OpenSSH SHA256 fingerprint, the same text the agent
// prints at join and the admin compares before approving.
func KeyID(k keys.NodePublic) string { return k.Fingerprint() }

// KeyID returns the keyid this Signer writes.
func (s *Signer) KeyID() string { return s.keyID }

// Sign signs req, whose body is body, at the Signer's clock. See the package function Sign.
func (s *Signer) Sign(req *http.Request, body []byte) error {
	return sign(req, body, s.key, s.keyID, s.now(), rand.Reader)
}

// Sign sets Content-Digest, Signature-Input and Signature on req, whose body is body (nil or empty
// for none), signing with key at time now. The keyid is KeyID(key.Public()). It replaces any of those
// three headers already present. req.Body is left alone: the caller sends exactly body.
func Sign(req *http.Request, body []byte, key keys.NodePrivate, now time.Time) error {
	return sign(req, body, key, KeyID(key.Public()), now, rand.Reader)
}

func sign(req *http.Request, body []byte, key keys.NodePrivate, keyID string, now time.Time, random io.Reader) error {
	if key.IsZero() {
		return fmt.Errorf("httpsig: no signing key")
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	var nb [nonceBytes]byte
	if _, err := io.ReadFull(random, nb[:]); err != nil {
		return fmt.Errorf("httpsig: nonce: %w", err)
	}
	req.Header.Set(HeaderContentDigest, ContentDigest(body))
	m, err := clientMessage(req)
	if err != nil {
		return fmt.Errorf("httpsig: %w", err)
	}
	il := innerList{params: []param{
		{key: "created", val: now.Unix()},
		{key: "nonce", val: base64.RawURLEncoding.EncodeToString(nb[:])},
		{key: "keyid", val: keyID},
		{key: "alg", val: Alg},
	}}
	for _, c := range Covered {
		il.items = append(il.items, item{val: c})
	}
	base, err := signatureBase(m, il)
	if err != nil {
		return fmt.Errorf("httpsig: %w", err)
	}
	var input strings.Builder
	input.WriteString(Label + "=")
	if err := serializeInnerList(&input, il); err != nil {
		return fmt.Errorf("httpsig: %w", err)
	}
	req.Header.Set(HeaderSignatureInput, input.String())
	req.Header.Set(HeaderSignature, Label+"=:"+strictStdBase64.EncodeToString(key.Sign(base))+":")
	return nil
}

// Transport returns a RoundTripper that signs every request with s before base sends it (nil base is
// http.DefaultTransport). It reads the request body into memory to digest it, so it is for the
// channel's small JSON bodies. It signs whatever URL it is given: the agent's client should refuse
// redirects (http.Client.CheckRedirect) so that a signature is only ever made for the plane.
func (s *Signer) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{s: s, base: base}
}

type transport struct {
	s    *Signer
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("httpsig: read request body: %w", err)
		}
		body = b
	}
	// A RoundTripper must not modify the caller's request.
	out := req.Clone(req.Context())
	if body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	} else {
		out.Body = http.NoBody
	}
	out.ContentLength = int64(len(body))
	if err := t.s.Sign(out, body); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(out)
}

var _ http.RoundTripper = (*transport)(nil)
