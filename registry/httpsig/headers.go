package httpsig

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"net/http"
)

// The channel's header names and fixed values.
const (
	HeaderSignatureInput = "Signature-Input"
	HeaderSignature      = "Signature"
	HeaderContentDigest  = "Content-Digest"

	// Label is the one signature label the signer writes. The verifier accepts any single label, so
	// long as Signature-Input and Signature agree on it.
	Label = "sig1"
	// Alg is the only signature algorithm (RFC 9421 section 3.3.6).
	Alg = "ed25519"
	// DigestAlg is the only Content-Digest algorithm (RFC 9530).
	DigestAlg = "sha-256"
)

// Covered is the exact set of components every channel signature covers, in the order the signer
// writes them.
var Covered = []string{"@method", "@target-uri", "content-digest"}

// nonceBytes is the signer's nonce entropy; minNonceLen and maxNonceLen bound what the verifier takes.
// 16 random bytes are 22 base64url characters, so 22 characters of that alphabet are the least that
// can carry 128 bits.
const (
	nonceBytes  = 16
	minNonceLen = 22
	maxNonceLen = 128
)

// sigInput is a Signature-Input member that satisfies the channel's rules.
type sigInput struct {
	label   string
	list    innerList // as received: @signature-params is its serialisation
	created int64
	nonce   string
	keyID   string
}

// singleField returns the one field line of name, refusing several lines: two lines would be joined
// into one dictionary, and a second line is how a signature gets smuggled past a reader that looks at
// the first only.
func singleField(h http.Header, name string) (string, bool, error) {
	vals := h.Values(name)
	switch len(vals) {
	case 0:
		return "", false, nil
	case 1:
		return vals[0], true, nil
	}
	return "", true, fmt.Errorf("%s appears on %d field lines", name, len(vals))
}

// parseSignatureInput parses a Signature-Input value and checks it against the channel's profile:
// one member, an inner list naming exactly Covered (in any order, each once, without parameters), and
// exactly the parameters created, nonce, keyid and alg (in any order), alg being ed25519.
func parseSignatureInput(v string) (sigInput, error) {
	var si sigInput
	ms, err := parseDictionary(v)
	if err != nil {
		return si, err
	}
	if len(ms) != 1 {
		return si, fmt.Errorf("Signature-Input has %d members; the channel uses exactly one", len(ms))
	}
	il, ok := ms[0].val.(innerList)
	if !ok {
		return si, fmt.Errorf("Signature-Input member %q is not an inner list", ms[0].key)
	}
	si.label, si.list = ms[0].key, il
	if err := checkCovered(il.items); err != nil {
		return si, err
	}
	var haveCreated, haveAlg bool
	for _, p := range il.params {
		switch p.key {
		case "created":
			n, ok := p.val.(int64)
			if !ok || n < 0 {
				return si, fmt.Errorf("created is not a non-negative integer")
			}
			si.created, haveCreated = n, true
		case "nonce":
			s, ok := p.val.(string)
			if !ok || !validNonce(s) {
				return si, fmt.Errorf("nonce is not a string of %d to %d base64url characters", minNonceLen, maxNonceLen)
			}
			si.nonce = s
		case "keyid":
			s, ok := p.val.(string)
			if !ok || s == "" {
				return si, fmt.Errorf("keyid is not a non-empty string")
			}
			si.keyID = s
		case "alg":
			if s, ok := p.val.(string); !ok || s != Alg {
				return si, fmt.Errorf("alg is not %q", Alg)
			}
			haveAlg = true
		default:
			// expires, tag and any later parameter are refused: a parameter the verifier does not
			// enforce would be a promise nobody keeps.
			return si, fmt.Errorf("signature parameter %q is not part of the channel profile", p.key)
		}
	}
	switch {
	case !haveCreated:
		return si, fmt.Errorf("created is missing")
	case si.nonce == "":
		return si, fmt.Errorf("nonce is missing")
	case si.keyID == "":
		return si, fmt.Errorf("keyid is missing")
	case !haveAlg:
		return si, fmt.Errorf("alg is missing")
	}
	return si, nil
}

func checkCovered(items []item) error {
	if len(items) != len(Covered) {
		return fmt.Errorf("signature covers %d components; the channel requires exactly %v", len(items), Covered)
	}
	seen := map[string]bool{}
	for _, it := range items {
		name, ok := it.val.(string)
		if !ok || len(it.params) > 0 {
			return fmt.Errorf("component identifiers must be plain strings")
		}
		known := false
		for _, c := range Covered {
			known = known || c == name
		}
		if !known || seen[name] {
			return fmt.Errorf("signature covers %q; the channel requires exactly %v", name, Covered)
		}
		seen[name] = true
	}
	return nil
}

func validNonce(s string) bool {
	if len(s) < minNonceLen || len(s) > maxNonceLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlpha(c) && !isDigit(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// parseSignature parses a Signature value: one member, named label, whose value is a 64-byte byte
// sequence without parameters.
func parseSignature(v, label string) ([]byte, error) {
	ms, err := parseDictionary(v)
	if err != nil {
		return nil, err
	}
	if len(ms) != 1 {
		return nil, fmt.Errorf("Signature has %d members; the channel uses exactly one", len(ms))
	}
	if ms[0].key != label {
		return nil, fmt.Errorf("Signature label %q does not match Signature-Input label %q", ms[0].key, label)
	}
	it, ok := ms[0].val.(item)
	if !ok || len(it.params) > 0 {
		return nil, fmt.Errorf("Signature member is not a bare byte sequence")
	}
	sig, ok := it.val.([]byte)
	if !ok || len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("Signature is not a %d-byte byte sequence", ed25519.SignatureSize)
	}
	return sig, nil
}

// parseContentDigest parses a Content-Digest value: exactly one member, sha-256, a 32-byte byte
// sequence without parameters. A second algorithm is refused rather than ignored, so there is never a
// digest the plane did not check.
func parseContentDigest(v string) ([]byte, error) {
	ms, err := parseDictionary(v)
	if err != nil {
		return nil, err
	}
	if len(ms) != 1 || ms[0].key != DigestAlg {
		return nil, fmt.Errorf("Content-Digest must hold exactly one %s digest", DigestAlg)
	}
	it, ok := ms[0].val.(item)
	if !ok || len(it.params) > 0 {
		return nil, fmt.Errorf("Content-Digest member is not a bare byte sequence")
	}
	d, ok := it.val.([]byte)
	if !ok || len(d) != sha256.Size {
		return nil, fmt.Errorf("Content-Digest is not a %d-byte byte sequence", sha256.Size)
	}
	return d, nil
}

// ContentDigest returns the Content-Digest field value for body (RFC 9530): sha-256 of the exact
// bytes, also for an empty body.
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return DigestAlg + "=:" + strictStdBase64.EncodeToString(sum[:]) + ":"
}
