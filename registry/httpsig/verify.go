package httpsig

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// MaxSkew is how far a signature's created time may lie from the verifier's clock, either way.
const MaxSkew = 5 * time.Minute

// nonceGrace keeps a nonce past the end of its acceptance window, so that plane replicas whose clocks
// differ a little, sharing one store, never forget a nonce another replica would still accept.
const nonceGrace = time.Minute

// KeyLookup finds the node key a keyid names. found is false when no node holds that key (the request
// is refused as channel.signature_invalid); err is a failure of the lookup itself, returned to the
// caller as it is.
type KeyLookup func(ctx context.Context, keyID string) (key keys.NodePublic, found bool, err error)

// Verifier checks channel signatures on the plane. Its fields are read only; one Verifier serves all
// requests concurrently.
type Verifier struct {
	// Base is the plane's external base URL (scheme, host, optional path prefix), used to rebuild
	// @target-uri for a plane behind a proxy or load balancer. Nil means the scheme comes from the
	// connection (TLS or not) and the authority from the request's Host.
	Base *url.URL
	// Keys finds node keys by keyid. Required.
	Keys KeyLookup
	// Nonces records nonces so each is accepted once. Required.
	Nonces NonceStore
}

// Proof is what a verified request proves.
type Proof struct {
	KeyID   string
	Key     keys.NodePublic
	Created time.Time
	Nonce   string
}

// Verify checks r, whose body (already read, under the caller's cap) is body, at time now, and returns
// the identity its signature proves. The checks run in this order, each refusal carrying its code:
//
//  1. neither Signature-Input nor Signature present: channel.unsigned
//  2. either header repeated, oversized or malformed; other components covered than exactly @method,
//     @target-uri and content-digest; other parameters than created, nonce, keyid and alg; alg not
//     ed25519: channel.signature_invalid
//  3. created more than MaxSkew from now, either way: channel.clock_skew
//  4. keyid unknown, or the signature does not verify over the rebuilt signature base:
//     channel.signature_invalid
//  5. Content-Digest missing, malformed, not sha-256 alone, or not the digest of body:
//     channel.digest_mismatch
//  6. nonce already used with this keyid: channel.replayed
//
// A nonce is recorded only for a request that passed every other check, so requests that prove no node
// cannot fill the store. Errors of the key lookup or nonce store are returned as they are.
func (v *Verifier) Verify(r *http.Request, body []byte, now time.Time) (Proof, error) {
	if v.Keys == nil || v.Nonces == nil {
		return Proof{}, errors.New("httpsig: Verifier needs Keys and Nonces")
	}
	ctx := r.Context()
	inputVal, haveInput, errInput := singleField(r.Header, HeaderSignatureInput)
	sigVal, haveSig, errSig := singleField(r.Header, HeaderSignature)
	if !haveInput && !haveSig {
		return Proof{}, errcode.New(errcode.ChannelUnsigned, "request is not signed: it carries no Signature-Input or Signature")
	}
	if err := errors.Join(errInput, errSig); err != nil {
		return Proof{}, invalid(err)
	}
	if !haveInput || !haveSig {
		return Proof{}, invalid(fmt.Errorf("request carries only one of Signature-Input and Signature"))
	}
	si, err := parseSignatureInput(inputVal)
	if err != nil {
		return Proof{}, invalid(fmt.Errorf("Signature-Input: %w", err))
	}
	sig, err := parseSignature(sigVal, si.label)
	if err != nil {
		return Proof{}, invalid(fmt.Errorf("Signature: %w", err))
	}

	created := time.Unix(si.created, 0)
	if skew := now.Sub(created); skew > MaxSkew || skew < -MaxSkew {
		way := "behind"
		if skew < 0 {
			way = "ahead of"
		}
		return Proof{}, errcode.New(errcode.ChannelClockSkew,
			"signature created %s, %s %s the plane's clock (%s); the limit is %s either way: check the node's clock",
			created.UTC().Format(time.RFC3339), skew.Abs(), way, now.UTC().Format(time.RFC3339), MaxSkew).
			With(errcode.DetailSkewSeconds, int64(-skew/time.Second))
	}

	key, found, err := v.Keys(ctx, si.keyID)
	if err != nil {
		return Proof{}, fmt.Errorf("httpsig: key lookup: %w", err)
	}
	// The keyid is the key's fingerprint: a lookup that answers with another key is a plane bug, and it
	// must not turn into a node proving an identity that is not its own.
	if !found || key.IsZero() || KeyID(key) != si.keyID {
		return Proof{}, invalid(fmt.Errorf("keyid %q names no known node key", si.keyID)).With(errcode.DetailKeyID, si.keyID)
	}
	m, err := serverMessage(r, v.Base)
	if err != nil {
		return Proof{}, invalid(err)
	}
	base, err := signatureBase(m, si.list)
	if err != nil {
		// The only component that can be absent is content-digest.
		return Proof{}, errcode.Wrap(err, errcode.ChannelDigestMismatch, "Content-Digest is missing or unusable")
	}
	if !key.Verify(base, sig) {
		return Proof{}, invalid(fmt.Errorf("signature does not verify for this method, URL and Content-Digest")).With(errcode.DetailKeyID, si.keyID)
	}

	digestVal, _, err := singleField(r.Header, HeaderContentDigest)
	if err != nil {
		return Proof{}, errcode.Wrap(err, errcode.ChannelDigestMismatch, "Content-Digest is unusable")
	}
	digest, err := parseContentDigest(digestVal)
	if err != nil {
		return Proof{}, errcode.Wrap(err, errcode.ChannelDigestMismatch, "Content-Digest is unusable")
	}
	sum := sha256.Sum256(body)
	if subtle.ConstantTimeCompare(sum[:], digest) != 1 {
		return Proof{}, errcode.New(errcode.ChannelDigestMismatch, "Content-Digest does not match the %d-byte body received", len(body))
	}

	fresh, err := v.Nonces.NonceUse(ctx, si.keyID, si.nonce, created.Add(MaxSkew+nonceGrace))
	if err != nil {
		return Proof{}, err
	}
	if !fresh {
		return Proof{}, errcode.New(errcode.ChannelReplayed, "nonce already used: this request was replayed").With(errcode.DetailKeyID, si.keyID)
	}
	return Proof{KeyID: si.keyID, Key: key, Created: created, Nonce: si.nonce}, nil
}

func invalid(err error) *errcode.Error {
	return errcode.Wrap(err, errcode.ChannelSignatureInvalid, "signature refused").With(errcode.DetailReason, err.Error())
}
