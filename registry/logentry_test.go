package registry

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"testing"

	"github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	rekorpb "github.com/sigstore/rekor-tiles/v2/pkg/generated/protobuf"
	"github.com/sigstore/rekor-tiles/v2/pkg/types/hashedrekord"
	"github.com/transparency-dev/merkle/rfc6962"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestRekorV2EntryIsRekorTiles: the entry rebuilt from a bundle is, byte for byte, the canonical JSON
// rekor-tiles makes of the same hashedrekord v0.0.2 entry, and hashes to the leaf rekor-tiles'
// ToEntryHash (what sigstore-go proves inclusion of) computes, over many keys and signatures.
func TestRekorV2EntryIsRekorTiles(t *testing.T) {
	for i := range 50 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
			if err != nil {
				t.Fatal(err)
			}
			digest := sha256.Sum256([]byte(fmt.Sprint("envelope ", i)))
			sig, err := ecdsa.SignASN1(rand.Reader, k, digest[:])
			if err != nil {
				t.Fatal(err)
			}
			pbsig := &rekorpb.Signature{Content: sig, Verifier: &rekorpb.Verifier{
				Verifier:   &rekorpb.Verifier_PublicKey{PublicKey: &rekorpb.PublicKey{RawBytes: der}},
				KeyDetails: protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256,
			}}
			want, err := hashedrekord.ToEntryHash(digest[:], pbsig)
			if err != nil {
				t.Fatal(err)
			}
			body := rekorV2Entry(digest, sig, der)
			if got := rekorV2LeafHash(body); !bytes.Equal(got, want) {
				t.Fatalf("leaf hash %x, rekor-tiles %x", got, want)
			}
			entry := &rekorpb.Entry{Kind: "hashedrekord", ApiVersion: "0.0.2", Spec: &rekorpb.Spec{Spec: &rekorpb.Spec_HashedRekordV002{
				HashedRekordV002: &rekorpb.HashedRekordLogEntryV002{
					Data:      &protocommon.HashOutput{Digest: digest[:], Algorithm: protocommon.HashAlgorithm_SHA2_256},
					Signature: pbsig,
				}}}}
			js, err := protojson.Marshal(entry)
			if err != nil {
				t.Fatal(err)
			}
			canon, err := jsoncanonicalizer.Transform(js)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(body, canon) {
				t.Fatalf("entry\n%s\nrekor-tiles\n%s", body, canon)
			}
			if !bytes.Equal(rfc6962.DefaultHasher.HashLeaf(canon), want) {
				t.Fatal("rekor-tiles' own canonical entry does not hash to its entry hash")
			}
		})
	}
}
