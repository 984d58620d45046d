package statement

import (
	"bytes"
	"context"
	"crypto"
	"testing"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/lexicon-fleet/lexicon/registry/keys"
)

// fixedKeypair is a publisher key as sigstore-go's signer sees it, returning a signature made once, so
// the bundle sigstore-go builds can be compared with the one Sign builds.
type fixedKeypair struct {
	k   keys.PublisherPrivate
	sig []byte
	pae []byte // what sigstore-go asked to sign
}

func (p *fixedKeypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	return protocommon.HashAlgorithm_SHA2_256
}
func (p *fixedKeypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
}
func (p *fixedKeypair) GetHint() []byte                  { return []byte(p.k.Public().Fingerprint()) }
func (p *fixedKeypair) GetKeyAlgorithm() string          { return "ECDSA" }
func (p *fixedKeypair) GetPublicKey() crypto.PublicKey   { return p.k.Public().ECDSA() }
func (p *fixedKeypair) GetPublicKeyPem() (string, error) { return string(p.k.Public().PEM()), nil }
func (p *fixedKeypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	p.pae = bytes.Clone(data)
	return p.sig, nil, nil
}

// TestSignIsSigstoreGosBundle: the bundle Sign makes is the one sigstore-go's sign.Bundle makes for the
// same key and signature, byte for byte as statement.bundle.json holds it, and the bytes signed are
// the same pre-authentication encoding.
func TestSignIsSigstoreGosBundle(t *testing.T) {
	key := keys.NewPublisher()
	for _, payload := range [][]byte{[]byte(`{"_type":"https://in-toto.io/Statement/v1"}`), {}, bytes.Repeat([]byte("é"), 1000)} {
		ours, err := Sign(payload, key)
		if err != nil {
			t.Fatal(err)
		}
		sig := ours.GetDsseEnvelope().GetSignatures()[0].GetSig()
		if !key.Public().Verify(PAE(PayloadType, payload), sig) {
			t.Fatal("Sign's signature does not verify over the pre-authentication encoding")
		}
		kp := &fixedKeypair{k: key, sig: sig}
		theirs, err := sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: PayloadType}, kp, sign.BundleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(kp.pae, PAE(PayloadType, payload)) {
			t.Fatalf("sigstore-go signs %q, PAE is %q", kp.pae, PAE(PayloadType, payload))
		}
		a, err := MarshalBundle(ours)
		if err != nil {
			t.Fatal(err)
		}
		b, err := MarshalBundle(theirs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("Sign:\n%s\nsigstore-go:\n%s", a, b)
		}
	}
}
