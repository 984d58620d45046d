package registry_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/lexicon-fleet/lexicon/registry"
)

// TestSigstoreGoVerifiesRelease: a logged release verifies with sigstore-go as any Sigstore user would
// call it: the trust folder's trusted_root.json and the publisher's PEM as they are, the key loaded with
// sigstore's default verifier for its type, a transparency-log entry required, and the artifact checked
// against the statement's subjects. Nothing Lexicon-specific is configured.
func TestSigstoreGoVerifiesRelease(t *testing.T) {
	f := newFixture(t)
	dir := f.build(t, 1, nil)
	f.addLog(t, dir)
	trust := f.newTrust(t, true)

	b, err := bundle.LoadJSONFromPath(filepath.Join(dir, registry.BundleFile))
	must(t, err)
	tr, err := root.NewTrustedRootFromPath(filepath.Join(trust, registry.TrustedRootFile))
	must(t, err)
	pems, err := filepath.Glob(filepath.Join(trust, "statement_keys", "*.pem"))
	must(t, err)
	if len(pems) != 1 {
		t.Fatalf("trust folder holds %d PEM keys, want 1", len(pems))
	}
	pemBytes, err := os.ReadFile(pems[0])
	must(t, err)
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	must(t, err)
	verifier, err := signature.LoadDefaultVerifier(pub)
	must(t, err)
	key := root.NewExpiringKey(verifier, time.Time{}, time.Time{})
	material := root.TrustedMaterialCollection{tr, root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })}
	v, err := sgverify.NewVerifier(material, sgverify.WithTransparencyLog(1), sgverify.WithNoObserverTimestamps())
	must(t, err)

	module, err := os.ReadFile(blobOf(t, dir, "word/word_000"))
	must(t, err)
	res, err := v.Verify(b, sgverify.NewPolicy(sgverify.WithArtifact(bytes.NewReader(module)), sgverify.WithKey()))
	if err != nil {
		t.Fatalf("sigstore-go refuses the release: %v", err)
	}
	if res.Statement.GetPredicateType() != "https://lexicon-fleet.github.io/release/v2" {
		t.Fatalf("predicate type %q", res.Statement.GetPredicateType())
	}
	// And it is not simply accepting: another artifact is refused.
	if _, err := v.Verify(b, sgverify.NewPolicy(sgverify.WithArtifact(bytes.NewReader([]byte("not pinned"))), sgverify.WithKey())); err == nil {
		t.Fatal("sigstore-go accepted an artifact the statement does not pin")
	}
}
