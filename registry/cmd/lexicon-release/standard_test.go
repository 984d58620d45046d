package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
)

// The standard verifiers `make standard-verifiers` builds under build/: cosign from the Go module proxy
// (tools/cosign/go.mod) and sigstore-js's verify API from npm (tools/sigstore-js).
var (
	repoRoot     = filepath.Join("..", "..", "..")
	cosignBin    = filepath.Join(repoRoot, "build", "tools", "cosign")
	sigstoreJSMJ = filepath.Join(repoRoot, "build", "sigstore-js", "verify.mjs")
)

// standardRelease is a release made, logged and trusted by lexicon-release alone, as a publisher
// makes one: keygen, build, log into a Rekor v2-shaped log with a timestamp from the authority beside
// it, trust init with that log's key and authority's chain.
type standardRelease struct {
	dir, trust, pem, artifact string
}

func makeStandardRelease(t *testing.T) standardRelease {
	t.Helper()
	lg := tlogtest.New("log.lexicon.test")
	srv := lg.Server()
	t.Cleanup(srv.Close)
	work := t.TempDir()
	k := filepath.Join(work, "keys")
	logKey, tsaChain := filepath.Join(work, "log.pub"), filepath.Join(work, "tsa.pem")
	must(t, keys.WritePublic(logKey, lg.PublicKey().String()))
	must(t, os.WriteFile(tsaChain, lg.TimestampChainPEM(), 0o644))
	if code, res := runJSON(t, "keygen", "--out", k); code != 0 {
		t.Fatalf("keygen: %v", res)
	}
	r := standardRelease{dir: filepath.Join(work, "release"), trust: filepath.Join(work, "trust")}
	if code, res := runJSON(t, "build", "--key", filepath.Join(k, "publisher.key"), "--modules", modules(t, "1.0.0", nil),
		"--release", "1.0.0", "--sequence", "1", "--out", r.dir); code != 0 {
		t.Fatalf("build: %v", res)
	}
	if code, res := runJSON(t, "log", "--rekor", srv.URL, "--tsa", srv.URL+tlogtest.TimestampPath, r.dir); code != 0 {
		t.Fatalf("log: %v", res)
	}
	if code, res := runJSON(t, "trust", "init", "--out", r.trust, "--key", filepath.Join(k, "publisher.pub"), "--log-key", logKey, "--tsa-chain", tsaChain); code != 0 {
		t.Fatalf("trust init: %v", res)
	}
	pems, err := filepath.Glob(filepath.Join(r.trust, "statement_keys", "*.pem"))
	must(t, err)
	if len(pems) != 1 {
		t.Fatalf("trust init wrote %d PEM keys, want 1", len(pems))
	}
	r.pem = pems[0]
	for _, s := range readStatement(t, r.dir).Subject {
		if strings.HasPrefix(s.Name, "word/hello@") {
			r.artifact = filepath.Join(r.dir, "sha256", s.SHA256())
		}
	}
	// Our own verifier takes it too.
	if code, out, errOut := run(t, "verify", r.dir, "--trust", r.trust, "--dry-run"); code != 0 {
		t.Fatalf("lexicon-release verify: %d\n%s\n%s", code, out, errOut)
	}
	return r
}

// otherArtifact is a file the release does not pin: every standard verifier must refuse it.
func (r standardRelease) otherArtifact(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "other.wasm")
	must(t, os.WriteFile(p, []byte("\x00asm not what was signed"), 0o644))
	return p
}

// needTool fails under CI and skips elsewhere when a standard verifier has not been built.
func needTool(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s missing in CI (%v): make standard-verifiers builds it", what, err)
		}
		t.Skipf("%s not built (run make standard-verifiers): %v", what, err)
	}
}

// forgedCheckpoint writes a copy of the release's bundle whose log checkpoint names another tree root:
// its signature no longer holds, so a verifier that checks the log refuses it.
func (r standardRelease) forgedCheckpoint(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir, registry.BundleFile))
	must(t, err)
	var b protobundle.Bundle
	must(t, protojson.Unmarshal(data, &b))
	cp := b.GetVerificationMaterial().GetTlogEntries()[0].GetInclusionProof().GetCheckpoint()
	lines := strings.SplitN(cp.Envelope, "\n", 4)
	lines[2] = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	cp.Envelope = strings.Join(lines, "\n")
	out, err := statement.MarshalBundle(&b)
	must(t, err)
	p := filepath.Join(t.TempDir(), registry.BundleFile)
	must(t, os.WriteFile(p, out, 0o644))
	return p
}

// TestStandardVerifiers: a release lexicon-release makes and logs verifies, unmodified, with cosign,
// sigstore-js and sigstore-go, each given only the trust folder's trusted_root.json and the publisher's
// PEM key; and each refuses an artifact the statement does not pin and a forged log checkpoint, so none
// of them passes vacuously.
func TestStandardVerifiers(t *testing.T) {
	r := makeStandardRelease(t)
	bundlePath := filepath.Join(r.dir, registry.BundleFile)
	rootPath := filepath.Join(r.trust, registry.TrustedRootFile)
	check := func(t *testing.T, name string, verify func(bundle, artifact string) ([]byte, error)) {
		t.Helper()
		if out, err := verify(bundlePath, r.artifact); err != nil {
			t.Fatalf("%s refuses the release: %v\n%s", name, err, out)
		}
		if out, err := verify(bundlePath, r.otherArtifact(t)); err == nil {
			t.Fatalf("%s accepted an artifact the statement does not pin:\n%s", name, out)
		}
		if out, err := verify(r.forgedCheckpoint(t), r.artifact); err == nil {
			t.Fatalf("%s accepted a forged log checkpoint:\n%s", name, out)
		}
	}

	t.Run("sigstore-go", func(t *testing.T) {
		check(t, "sigstore-go", func(bundlePath, artifact string) ([]byte, error) {
			b, err := bundle.LoadJSONFromPath(bundlePath)
			must(t, err)
			tr, err := root.NewTrustedRootFromPath(rootPath)
			must(t, err)
			pemBytes, err := os.ReadFile(r.pem)
			must(t, err)
			pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
			must(t, err)
			sv, err := signature.LoadDefaultVerifier(pub)
			must(t, err)
			key := root.NewExpiringKey(sv, time.Time{}, time.Time{})
			material := root.TrustedMaterialCollection{tr, root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })}
			// sigstore-go's documented verification: a log entry and an observer timestamp required.
			v, err := sgverify.NewVerifier(material, sgverify.WithTransparencyLog(1), sgverify.WithObserverTimestamps(1))
			must(t, err)
			f, err := os.Open(artifact)
			must(t, err)
			defer f.Close()
			_, err = v.Verify(b, sgverify.NewPolicy(sgverify.WithArtifact(f), sgverify.WithKey()))
			return nil, err
		})
	})

	t.Run("cosign", func(t *testing.T) {
		needTool(t, cosignBin, "cosign")
		check(t, "cosign", func(bundlePath, artifact string) ([]byte, error) {
			cmd := exec.Command(cosignBin, "verify-blob-attestation", "--bundle", bundlePath, "--key", r.pem,
				"--trusted-root", rootPath, "--type", "https://lexicon-fleet.github.io/release/v2", artifact)
			// Offline, and never a look at a cached public-good root.
			cmd.Env = append(os.Environ(), "SIGSTORE_NO_CACHE=true", "TUF_ROOT="+t.TempDir())
			return cmd.CombinedOutput()
		})
	})

	t.Run("sigstore-js", func(t *testing.T) {
		needTool(t, sigstoreJSMJ, "sigstore-js")
		node, err := exec.LookPath("node")
		if err != nil {
			needTool(t, "/nonexistent/node", "node")
		}
		check(t, "sigstore-js", func(bundlePath, artifact string) ([]byte, error) {
			out, err := exec.Command(node, sigstoreJSMJ, bundlePath, rootPath, r.pem, artifact).CombinedOutput()
			if err == nil && !bytes.Contains(out, []byte("verified")) {
				err = errors.New("no verdict printed")
			}
			return out, err
		})
	})
}
