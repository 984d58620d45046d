package registry_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func TestVerifyGoodRelease(t *testing.T) {
	f := newFixture(t)
	dir := f.build(t, 1, nil)
	rel, rep, err := verifyDir(t, f.trustDir, dir)
	if err != nil {
		t.Fatalf("verify: %v\n%+v", err, rep)
	}
	if rel.Statement.Predicate.Sequence != 1 || len(rel.Modules()) != 4 {
		t.Fatalf("release %+v", rel.Statement.Predicate)
	}
	for _, c := range rep.Checks {
		if !c.OK {
			t.Fatalf("check %s not ok: %s", c.Check, c.Message)
		}
	}
	// The state moved: the same statement verifies again, and it is remembered.
	tr, err := registry.OpenTrust(f.trustDir)
	must(t, err)
	if tr.State().Sequence != 1 || tr.State().Statement != rel.Digest {
		t.Fatalf("state %+v", tr.State())
	}
	if _, _, err := verifyDir(t, f.trustDir, dir); err != nil {
		t.Fatalf("re-verify the accepted release: %v", err)
	}
}

func TestVerifyLoggedRelease(t *testing.T) {
	f := newFixture(t)
	dir := f.build(t, 1, nil)
	f.addLog(t, dir)
	rel, _, err := verifyDir(t, f.newTrust(t, true), dir)
	if err != nil || !rel.Logged {
		t.Fatalf("logged release: %v", err)
	}
}

// TestVerifyInTotoExtensions: a statement another tool annotated, as in-toto allows (an extension
// field, subject annotations and a second digest), verifies; the sha256 still pins each artifact.
func TestVerifyInTotoExtensions(t *testing.T) {
	f := newFixture(t)
	dir := f.build(t, 1, nil)
	payload := readBundle(t, dir).GetDsseEnvelope().Payload
	payload = bytes.Replace(payload, []byte(`"subject":`), []byte(`"x-builder":{"id":"ci-42"},"subject":`), 1)
	payload = bytes.ReplaceAll(payload, []byte(`"digest":{"sha256":`),
		[]byte(`"annotations":{"reviewed":true},"digest":{"sha512":"`+strings.Repeat("0", 128)+`","sha256":`))
	signPayload(t, dir, f.key, payload)
	if _, _, err := verifyDir(t, f.trustDir, dir); err != nil {
		t.Fatalf("annotated statement refused: %v", err)
	}
	// The annotations do not loosen pinning: altered module bytes still fail.
	blob := blobOf(t, dir, "word/word_000")
	must(t, os.Chmod(blob, 0o644))
	must(t, os.WriteFile(blob, []byte("\x00asm altered"), 0o644))
	_, _, err := verifyDir(t, f.trustDir, dir)
	testkit.WantCode(t, err, errcode.ModuleDigestMismatch)
}

// TestTampering is the trust core's promise: each tampering fails closed, with its own code.
func TestTampering(t *testing.T) {
	cases := []struct {
		name string
		code string
		run  func(t *testing.T, f *fixture) error
	}{
		{"modified module bytes", errcode.ModuleDigestMismatch, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			must(t, os.WriteFile(blobOf(t, dir, "word/word_000@"), []byte("\x00asm evil"), 0o644))
			return verify(t, f.trustDir, dir)
		}},
		{"modified manifest", errcode.ModuleDigestMismatch, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			p := blobOf(t, dir, "manifest/word_000@")
			m, _ := os.ReadFile(p)
			must(t, os.WriteFile(p, bytes.Replace(m, []byte(`"look"`), []byte(`"destructive"`), 1), 0o644))
			return verify(t, f.trustDir, dir)
		}},
		{"artifact missing from the statement", errcode.ModuleNotPinned, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			resign(t, dir, f.key, func(st *statement.Statement) {
				st.Subject = dropSubject(st.Subject, "word/word_001@")
			})
			return verify(t, f.trustDir, dir)
		}},
		{"extra unpinned file", errcode.ModuleNotPinned, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			must(t, os.WriteFile(filepath.Join(dir, "sha256", strings.Repeat("e", 64)), []byte("extra"), 0o644))
			return verify(t, f.trustDir, dir)
		}},
		{"duplicate subject", errcode.StatementSubjectDuplicate, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			resign(t, dir, f.key, func(st *statement.Statement) {
				dup := st.Subject[0]
				dup.Digest.SHA256 = strings.Repeat("d", 64)
				st.Subject = append(st.Subject, dup)
			})
			return verify(t, f.trustDir, dir)
		}},
		{"unknown signing key", errcode.StatementSignatureInvalid, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			resign(t, dir, keys.NewPublisher(), func(*statement.Statement) {})
			return verify(t, f.trustDir, dir)
		}},
		{"signature over another payload", errcode.StatementSignatureInvalid, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			other := readBundle(t, f.build(t, 2, nil))
			b := readBundle(t, dir)
			b.GetDsseEnvelope().Signatures = other.GetDsseEnvelope().Signatures
			writeBundle(t, dir, b)
			return verify(t, f.trustDir, dir)
		}},
		{"payload edited after signing", errcode.StatementSignatureInvalid, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			b := readBundle(t, dir)
			env := b.GetDsseEnvelope()
			env.Payload = bytes.Replace(env.Payload, []byte(`"release":"1.1.0"`), []byte(`"release":"1.9.0"`), 1)
			writeBundle(t, dir, b)
			return verify(t, f.trustDir, dir)
		}},
		{"two signatures", errcode.StatementSignatureInvalid, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			b := readBundle(t, dir)
			env := b.GetDsseEnvelope()
			env.Signatures = append(env.Signatures, env.Signatures[0])
			writeBundle(t, dir, b)
			return verify(t, f.trustDir, dir)
		}},
		{"statement names another publisher", errcode.StatementSignatureInvalid, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			resign(t, dir, f.key, func(st *statement.Statement) { st.Predicate.Publisher = keys.NewPublisher().Public() })
			return verify(t, f.trustDir, dir)
		}},
		{"rollback to a lower sequence", errcode.StatementRollback, func(t *testing.T, f *fixture) error {
			must(t, verify(t, f.trustDir, f.build(t, 5, nil)))
			return verify(t, f.trustDir, f.build(t, 4, nil))
		}},
		{"another statement at the accepted sequence", errcode.StatementRollback, func(t *testing.T, f *fixture) error {
			must(t, verify(t, f.trustDir, f.build(t, 5, nil)))
			return verify(t, f.trustDir, f.build(t, 5, func(o *registry.BuildOptions) { o.Release = "9.9.9" }))
		}},
		{"expired statement", errcode.StatementExpired, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, func(o *registry.BuildOptions) { o.Now = now.AddDate(-1, 0, 0) })
			return verify(t, f.trustDir, dir)
		}},
		{"retired key", errcode.KeyRetired, func(t *testing.T, f *fixture) error {
			k2 := keys.NewPublisher()
			chain := []statement.ChainEntry{
				statement.SignChainEntry(statement.ChainEntry{Op: statement.OpAdd, Key: k2.Public(), FromSequence: 2}, f.key),
				statement.SignChainEntry(statement.ChainEntry{Op: statement.OpRetire, Key: f.key.Public(), FromSequence: 3}, k2),
			}
			must(t, verify(t, f.trustDir, f.build(t, 2, func(o *registry.BuildOptions) { o.Key, o.Chain = k2, chain })))
			// The retired key signs sequence 3 with a chain that leaves its retirement out: the node
			// remembers the retirement it accepted at sequence 2.
			return verify(t, f.trustDir, f.build(t, 3, nil))
		}},
		{"retired key, retirement in the same statement", errcode.KeyRetired, func(t *testing.T, f *fixture) error {
			k2 := keys.NewPublisher()
			chain := []statement.ChainEntry{
				statement.SignChainEntry(statement.ChainEntry{Op: statement.OpAdd, Key: k2.Public(), FromSequence: 1}, f.key),
				statement.SignChainEntry(statement.ChainEntry{Op: statement.OpRetire, Key: f.key.Public(), FromSequence: 2}, k2),
			}
			return verify(t, f.trustDir, f.build(t, 2, func(o *registry.BuildOptions) { o.Chain = chain }))
		}},
		{"retired key hands its authority to a key dated before its retirement", errcode.KeyRetired, func(t *testing.T, f *fixture) error {
			k2, k3 := keys.NewPublisher(), keys.NewPublisher()
			chain := []statement.ChainEntry{
				statement.SignChainEntry(statement.ChainEntry{Op: statement.OpAdd, Key: k2.Public(), FromSequence: 2}, f.key),
				statement.SignChainEntry(statement.ChainEntry{Op: statement.OpRetire, Key: f.key.Public(), FromSequence: 3}, k2),
			}
			must(t, verify(t, f.trustDir, f.build(t, 2, func(o *registry.BuildOptions) { o.Key, o.Chain = k2, chain })))
			// Whoever holds the retired key adds a key of their own "from sequence 2", when the old key
			// could still sign, and signs sequence 10 with it.
			forged := append(chain, statement.SignChainEntry(statement.ChainEntry{Op: statement.OpAdd, Key: k3.Public(), FromSequence: 2}, f.key))
			return verify(t, f.trustDir, f.build(t, 10, func(o *registry.BuildOptions) { o.Key, o.Chain = k3, forged }))
		}},
		{"key-chain retirement from sequence 0", errcode.StatementInvalid, func(t *testing.T, f *fixture) error {
			k2 := keys.NewPublisher()
			chain := []statement.ChainEntry{
				statement.SignChainEntry(statement.ChainEntry{Op: statement.OpAdd, Key: k2.Public(), FromSequence: 2}, f.key),
				statement.SignChainEntry(statement.ChainEntry{Op: statement.OpRetire, Key: f.key.Public(), FromSequence: 3}, k2),
			}
			must(t, verify(t, f.trustDir, f.build(t, 2, func(o *registry.BuildOptions) { o.Key, o.Chain = k2, chain })))
			// "From 0" once read as "from 1" (and before that as "never retired"): it is refused, by the
			// builder and by the verifier of a statement signed without it.
			zero := statement.SignChainEntry(statement.ChainEntry{Op: statement.OpRetire, Key: f.key.Public(), FromSequence: 0}, k2)
			_, err := registry.Build(registry.BuildOptions{Key: k2, ModulesDir: f.modules, Release: "1.3.0", Sequence: 3,
				Chain: append(chain, zero), OutDir: filepath.Join(t.TempDir(), "release"), Now: now})
			testkit.WantCode(t, err, errcode.StatementInvalid)
			dir := f.build(t, 3, func(o *registry.BuildOptions) { o.Key, o.Chain = k2, chain })
			resign(t, dir, k2, func(st *statement.Statement) { st.Predicate.KeyChain = append(st.Predicate.KeyChain, zero) })
			return verify(t, f.trustDir, dir)
		}},
		{"key-chain addition from sequence 0", errcode.StatementInvalid, func(t *testing.T, f *fixture) error {
			k2 := keys.NewPublisher()
			dir := f.build(t, 1, nil)
			resign(t, dir, f.key, func(st *statement.Statement) {
				st.Predicate.KeyChain = []statement.ChainEntry{
					statement.SignChainEntry(statement.ChainEntry{Op: statement.OpAdd, Key: k2.Public(), FromSequence: 0}, f.key)}
			})
			return verify(t, f.trustDir, dir)
		}},
		{"key-chain link signed by a key not held", errcode.KeyChainInvalid, func(t *testing.T, f *fixture) error {
			rogue, k2 := keys.NewPublisher(), keys.NewPublisher()
			chain := []statement.ChainEntry{statement.SignChainEntry(statement.ChainEntry{Op: statement.OpAdd, Key: k2.Public(), FromSequence: 1}, rogue)}
			return verify(t, f.trustDir, f.build(t, 1, func(o *registry.BuildOptions) { o.Key, o.Chain = k2, chain }))
		}},
		{"key-chain link with a forged signature", errcode.KeyChainInvalid, func(t *testing.T, f *fixture) error {
			k2 := keys.NewPublisher()
			e := statement.SignChainEntry(statement.ChainEntry{Op: statement.OpAdd, Key: k2.Public(), FromSequence: 1}, f.key)
			e.FromSequence = 2 // the signature covered 1
			return verify(t, f.trustDir, f.build(t, 1, func(o *registry.BuildOptions) { o.Key, o.Chain = k2, []statement.ChainEntry{e} }))
		}},
		{"key used before its chain start", errcode.KeyChainInvalid, func(t *testing.T, f *fixture) error {
			k2 := keys.NewPublisher()
			chain := []statement.ChainEntry{statement.SignChainEntry(statement.ChainEntry{Op: statement.OpAdd, Key: k2.Public(), FromSequence: 10}, f.key)}
			return verify(t, f.trustDir, f.build(t, 3, func(o *registry.BuildOptions) { o.Key, o.Chain = k2, chain }))
		}},
		{"log entry spliced in from another statement", errcode.StatementUnlogged, func(t *testing.T, f *fixture) error {
			dir, other := f.build(t, 1, nil), f.build(t, 2, nil)
			f.addLog(t, other)
			b := readBundle(t, dir)
			b.VerificationMaterial.TlogEntries = readBundle(t, other).VerificationMaterial.TlogEntries
			writeBundle(t, dir, b)
			return wantLogCheck(t, verify(t, f.newTrust(t, true), dir), registry.LogCheckEntry)
		}},
		{"altered inclusion proof", errcode.StatementUnlogged, func(t *testing.T, f *fixture) error {
			f.addLog(t, f.build(t, 7, nil)) // a non-trivial tree
			dir := f.build(t, 1, nil)
			f.addLog(t, dir)
			b := readBundle(t, dir)
			b.VerificationMaterial.TlogEntries[0].InclusionProof.Hashes[0][0] ^= 1
			writeBundle(t, dir, b)
			return wantLogCheck(t, verify(t, f.newTrust(t, true), dir), registry.LogCheckEntry)
		}},
		{"checkpoint signed by a rogue log key", errcode.StatementUnlogged, func(t *testing.T, f *fixture) error {
			rogue := tlogtest.New("log.lexicon.test") // same origin, another key
			srv := rogue.Server()
			defer srv.Close()
			dir := f.build(t, 1, nil)
			honest := *f
			honest.logURL = srv.URL
			honest.addLog(t, dir)
			b := readBundle(t, dir)
			b.VerificationMaterial.TlogEntries[0].LogId = &protocommon.LogId{KeyId: f.log.PublicKey().ID()}
			writeBundle(t, dir, b)
			// The same code as every log failure, but the refusal says it was the checkpoint's signature.
			err := wantLogCheck(t, verify(t, f.newTrust(t, true), dir), registry.LogCheckCheckpoint)
			if !strings.Contains(err.Error(), "checkpoint is not signed by the held key of log log.lexicon.test") {
				t.Fatalf("rogue checkpoint refusal does not name the checkpoint and the log: %v", err)
			}
			return err
		}},
		{"log entry from a log whose key is not held", errcode.StatementUnlogged, func(t *testing.T, f *fixture) error {
			other := tlogtest.New("other.lexicon.test")
			srv := other.Server()
			defer srv.Close()
			dir := f.build(t, 1, nil)
			elsewhere := *f
			elsewhere.logURL = srv.URL
			elsewhere.addLog(t, dir)
			return wantLogCheck(t, verify(t, f.newTrust(t, true), dir), registry.LogCheckKey)
		}},
		{"missing log entry once log keys are held", errcode.StatementUnlogged, func(t *testing.T, f *fixture) error {
			return verify(t, f.newTrust(t, true), f.build(t, 1, nil))
		}},
		{"log keys removed after being held", errcode.StatementUnlogged, func(t *testing.T, f *fixture) error {
			trust := f.newTrust(t, true)
			dir := f.build(t, 1, nil)
			f.addLog(t, dir)
			must(t, verify(t, trust, dir))
			must(t, os.RemoveAll(filepath.Join(trust, "log_keys")))
			return verify(t, trust, f.build(t, 2, nil))
		}},
		{"group-writable key file", errcode.KeyFileUntrusted, func(t *testing.T, f *fixture) error {
			matches, _ := filepath.Glob(filepath.Join(f.trustDir, "statement_keys", "*.pub"))
			must(t, os.Chmod(matches[0], 0o664))
			return verify(t, f.trustDir, f.build(t, 1, nil))
		}},
		{"contract broken: param removed", errcode.ContractBroken, func(t *testing.T, f *fixture) error {
			return buildNext(t, f, func(m string) string {
				return strings.Replace(m, `"top": {"type": "integer"}`, `"depth": {"type": "integer"}`, 1)
			})
		}},
		{"contract broken: param type changed", errcode.ContractBroken, func(t *testing.T, f *fixture) error {
			return buildNext(t, f, func(m string) string {
				return strings.Replace(m, `"top": {"type": "integer"}`, `"top": {"type": "string"}`, 1)
			})
		}},
		{"contract broken: output field removed", errcode.ContractBroken, func(t *testing.T, f *fixture) error {
			return buildNext(t, f, func(m string) string { return strings.Replace(m, `, "truncated": {"type": "boolean"}`, ``, 1) })
		}},
		{"oversized statement", errcode.StatementTooLarge, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			big := bytes.Repeat([]byte(" "), statement.MaxBundleSize+1)
			must(t, os.WriteFile(filepath.Join(dir, registry.BundleFile), big, 0o644))
			return verify(t, f.trustDir, dir)
		}},
		{"oversized payload", errcode.StatementTooLarge, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			signPayload(t, dir, f.key, bytes.Repeat([]byte(" "), statement.MaxPayloadSize+1))
			return verify(t, f.trustDir, dir)
		}},
		{"oversized manifest", errcode.StatementTooLarge, func(t *testing.T, f *fixture) error {
			return buildWith(t, f, func(m string) string { return m + strings.Repeat(" ", manifest.MaxSize) })
		}},
		{"unknown manifest field", errcode.ManifestUnknownField, func(t *testing.T, f *fixture) error {
			return buildWith(t, f, func(m string) string {
				return strings.Replace(m, `"kind": "word",`, `"kind": "word", "run_as": "root",`, 1)
			})
		}},
		{"params schema without additionalProperties false", errcode.ManifestParamsOpen, func(t *testing.T, f *fixture) error {
			return buildWith(t, f, func(m string) string { return strings.Replace(m, `"additionalProperties": false,`, ``, 1) })
		}},
		{"malformed JSON: manifest", errcode.ManifestMalformed, func(t *testing.T, f *fixture) error {
			return buildWith(t, f, func(m string) string { return m[:len(m)/2] })
		}},
		{"malformed JSON: bundle", errcode.StatementMalformed, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			must(t, os.WriteFile(filepath.Join(dir, registry.BundleFile), []byte(`{"mediaType": `), 0o644))
			return verify(t, f.trustDir, dir)
		}},
		{"malformed JSON: envelope payload", errcode.StatementMalformed, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			signPayload(t, dir, f.key, []byte(`{"_type": "https://in-toto.io/Statement/v1", "subject": [`))
			return verify(t, f.trustDir, dir)
		}},
		{"malformed JSON: payload is not base64", errcode.StatementMalformed, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			data, _ := os.ReadFile(filepath.Join(dir, registry.BundleFile))
			payload := base64.StdEncoding.EncodeToString(readBundle(t, dir).GetDsseEnvelope().Payload)
			must(t, os.WriteFile(filepath.Join(dir, registry.BundleFile), bytes.Replace(data, []byte(payload), []byte("%%%not base64%%%"), 1), 0o644))
			return verify(t, f.trustDir, dir)
		}},
		{"malformed JSON: trust state", errcode.StatementMalformed, func(t *testing.T, f *fixture) error {
			must(t, os.WriteFile(filepath.Join(f.trustDir, "state"), []byte(`{"sequence": "seven"}`), 0o644))
			tampered(t, f)
			return verify(t, f.trustDir, f.build(t, 1, nil))
		}},
		{"malformed key file", errcode.KeyMalformed, func(t *testing.T, f *fixture) error {
			must(t, os.WriteFile(filepath.Join(f.trustDir, "statement_keys", "bad.pub"), []byte("node-key:AAAA\n"), 0o644))
			tampered(t, f)
			return verify(t, f.trustDir, f.build(t, 1, nil))
		}},
		{"unknown field in the statement", errcode.StatementMalformed, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			payload := readBundle(t, dir).GetDsseEnvelope().Payload
			signPayload(t, dir, f.key, bytes.Replace(payload, []byte(`"floor":`), []byte(`"run_first":"rm -rf /","floor":`), 1))
			return verify(t, f.trustDir, dir)
		}},
		{"repeated key in the statement", errcode.StatementMalformed, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			payload := readBundle(t, dir).GetDsseEnvelope().Payload
			signPayload(t, dir, f.key, bytes.Replace(payload, []byte(`"sequence":1,`), []byte(`"sequence":1,"sequence":99,`), 1))
			return verify(t, f.trustDir, dir)
		}},
		{"statement in the retired release/v1 format", errcode.StatementFormatRetired, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			payload := string(readBundle(t, dir).GetDsseEnvelope().Payload)
			for _, r := range [][2]string{{"release/v2", "release/v1"}, {`"issuedAt"`, `"issued_at"`}, {`"expiresAt"`, `"expires_at"`},
				{`"sourceCommit"`, `"source_commit"`}, {`"keyChain"`, `"key_chain"`}} {
				payload = strings.Replace(payload, r[0], r[1], 1)
			}
			signPayload(t, dir, f.key, []byte(payload))
			return verify(t, f.trustDir, dir)
		}},
		{"subject with no sha256 digest", errcode.StatementInvalid, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			payload := readBundle(t, dir).GetDsseEnvelope().Payload
			signPayload(t, dir, f.key, bytes.Replace(payload, []byte(`{"sha256":`), []byte(`{"sha512":`), 1))
			return verify(t, f.trustDir, dir)
		}},
		{"wrong predicate type", errcode.StatementInvalid, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			resign(t, dir, f.key, func(st *statement.Statement) { st.PredicateType = "https://slsa.dev/provenance/v1" })
			return verify(t, f.trustDir, dir)
		}},
		{"manifest describes another module than its row", errcode.StatementInvalid, func(t *testing.T, f *fixture) error {
			dir := f.build(t, 1, nil)
			resign(t, dir, f.key, func(st *statement.Statement) {
				m0, m1 := &st.Predicate.Modules[0], &st.Predicate.Modules[1]
				m0.Manifest, m1.Manifest = m1.Manifest, m0.Manifest
				for i, s := range st.Subject { // keep the subjects naming their rows' manifests
					switch s.Name {
					case m0.ManifestSubject():
						st.Subject[i].Digest.SHA256 = m0.Manifest
					case m1.ManifestSubject():
						st.Subject[i].Digest.SHA256 = m1.Manifest
					}
				}
			})
			return verify(t, f.trustDir, dir)
		}},
	}
	if len(cases) < 25 {
		t.Fatalf("only %d tampering cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			accepted[f.trustDir] = trustContents(t, f.trustDir)
			err := tc.run(t, f)
			testkit.WantCode(t, err, tc.code)
			// Failing closed means the trust directory is as the last release it accepted left it.
			if after := trustContents(t, f.trustDir); after != accepted[f.trustDir] {
				t.Fatalf("refused verification changed the trust directory:\n%s\n->\n%s", accepted[f.trustDir], after)
			}
		})
	}
}

// wantLogCheck fails unless err is a statement.unlogged refusal whose details.log_check is why.
func wantLogCheck(t *testing.T, err error, why string) error {
	t.Helper()
	if got := errcode.From(err, "").Details["log_check"]; got != why {
		t.Fatalf("log_check = %v, want %q (%v)", got, why, err)
	}
	return err
}

// accepted holds each trust directory's contents as of the last release it accepted.
var accepted = map[string]string{}

func verify(t *testing.T, trustDir, dir string) error {
	t.Helper()
	_, _, err := verifyDir(t, trustDir, dir)
	if err == nil {
		accepted[trustDir] = trustContents(t, trustDir)
	}
	return err
}

// tampered records a case's own change to the trust directory, which verification must then leave as
// it is.
func tampered(t *testing.T, f *fixture) { accepted[f.trustDir] = trustContents(t, f.trustDir) }

// trustContents is every file of a trust directory, named, in one string.
func trustContents(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		fmt.Fprintf(&b, "%s:\n%s\n", strings.TrimPrefix(path, dir), data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// buildWith builds a first release from modules whose manifests went through edit.
func buildWith(t *testing.T, f *fixture, edit func(string) string) error {
	t.Helper()
	_, err := registry.Build(registry.BuildOptions{
		Key: f.key, ModulesDir: writeModules(t, 2, func(_, m string) string { return edit(m) }),
		Release: "1.0.0", Sequence: 1, OutDir: filepath.Join(t.TempDir(), "r"), Now: now,
	})
	return err
}

// buildNext builds a release after the fixture's first, with word_001's manifest edited.
func buildNext(t *testing.T, f *fixture, edit func(string) string) error {
	t.Helper()
	prev := f.build(t, 1, nil)
	_, err := registry.Build(registry.BuildOptions{
		Key: f.key, PreviousDir: prev, Release: "1.1.0", Sequence: 2, OutDir: filepath.Join(t.TempDir(), "r"), Now: now,
		ModulesDir: writeModules(t, 3, func(name, m string) string {
			if name == "word_001" {
				return strings.Replace(edit(m), `"version": "1.0.0"`, `"version": "1.1.0"`, 1)
			}
			return m
		}),
	})
	return err
}

func dropSubject(subjects []statement.Subject, prefix string) []statement.Subject {
	var out []statement.Subject
	for _, s := range subjects {
		if !strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}
