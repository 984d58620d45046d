package registry_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
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
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
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

// TestTrustedRootReadBySigstoreGo: the trusted root written for every kind of log key a trust folder
// holds (ECDSA P-256 and Ed25519), with and without a timestamp authority, is one sigstore-go's loader
// reads, naming each log by its id. TrustedRootJSON's inputs are typed keys and parsed certificates,
// so this holds for any input; the check runs here rather than in every program that writes a trust
// folder, which would link sigstore-go's loader (and its TUF client) into the agent.
func TestTrustedRootReadBySigstoreGo(t *testing.T) {
	ecLog := tlogtest.New("ec.lexicon.test").PublicKey()
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	edLog, err := keys.NewLogPublic("ed.lexicon.test", edKey.Public())
	must(t, err)
	tsa, err := registry.ParseTimestampAuthority(tlogtest.New("tsa.lexicon.test").TimestampChainPEM())
	must(t, err)
	for name, tsas := range map[string][]registry.TimestampAuthority{"without a timestamp authority": nil, "with one": {tsa}} {
		t.Run(name, func(t *testing.T) {
			out, err := registry.TrustedRootJSON([]keys.LogPublic{ecLog, edLog}, tsas)
			must(t, err)
			tr, err := root.NewTrustedRootFromJSON(out)
			if err != nil {
				t.Fatalf("sigstore-go refuses the trusted root: %v\n%s", err, out)
			}
			for _, l := range []keys.LogPublic{ecLog, edLog} {
				if _, ok := tr.RekorLogs()[hex.EncodeToString(l.ID())]; !ok {
					t.Errorf("log %s is not in the trusted root as sigstore-go reads it", l.Origin())
				}
			}
			if got := len(tr.TimestampingAuthorities()); got != len(tsas) {
				t.Errorf("%d timestamp authorities read, %d written", got, len(tsas))
			}
		})
	}
}
