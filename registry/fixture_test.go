package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/registry/tlog"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
)

// now is the fixed clock of these tests; releases are issued at now and expire 90 days later.
var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const wordManifest = `{
  "schema": "lexicon/manifest/v1", "name": %q, "kind": "word", "version": "1.0.0", "class": "look",
  "summary": "A test word.",
  "params": {"type": "object", "additionalProperties": false,
             "properties": {"root": {"type": "string"}, "top": {"type": "integer"}}},
  "output": {"type": "object", "properties": {"entries": {"type": "array"}, "truncated": {"type": "boolean"}}},
  "capabilities": [{"cap": "fs.list", "paths": ["/var"]}],
  "module": {"file": "%s.wasm"}
}`

const driverManifest = `{"schema": "lexicon/manifest/v1", "name": "memory", "kind": "driver", "version": "1.0.0",
  "class": "dns", "summary": "Test driver.", "platforms": ["linux/amd64"], "module": {"file": "lexicon-driver-dns-memory"}}`

// writeModules makes a modules folder with n words and one driver.
func writeModules(t testing.TB, n int, edit func(name, manifest string) string) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("word_%03d", i)
		m := fmt.Sprintf(wordManifest, name, name)
		if edit != nil {
			m = edit(name, m)
		}
		writeModule(t, dir, name, m, name+".wasm", []byte("\x00asm\x01\x00\x00\x00"+name))
	}
	writeModule(t, dir, "driver-memory", driverManifest, "lexicon-driver-dns-memory", []byte("\x7fELF driver"))
	return dir
}

func writeModule(t testing.TB, dir, folder, manifest, file string, artifact []byte) {
	t.Helper()
	d := filepath.Join(dir, folder)
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, "manifest.json"), []byte(manifest), 0o644))
	must(t, os.WriteFile(filepath.Join(d, file), artifact, 0o644))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture is one publisher with a trust directory and a log.
type fixture struct {
	key      keys.PublisherPrivate
	modules  string
	log      *tlogtest.Log
	logURL   string
	trustDir string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{key: newKey(), modules: writeModules(t, 3, nil), log: tlogtest.New("log.lexicon.test")}
	srv := f.log.Server()
	t.Cleanup(srv.Close)
	f.logURL = srv.URL
	f.trustDir = f.newTrust(t, false)
	return f
}

// newTrust makes a trust directory holding the fixture's key, and its log key when withLog.
func (f *fixture) newTrust(t testing.TB, withLog bool, extra ...keys.PublisherPublic) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "trust")
	var logs []keys.LogPublic
	if withLog {
		logs = append(logs, f.log.PublicKey())
	}
	must(t, registry.InitTrust(dir, append([]keys.PublisherPublic{f.key.Public()}, extra...), logs))
	return dir
}

func (f *fixture) build(t testing.TB, seq uint64, mutate func(*registry.BuildOptions)) string {
	t.Helper()
	o := registry.BuildOptions{
		Key: f.key, ModulesDir: f.modules, Release: fmt.Sprintf("1.%d.0", seq), Sequence: seq,
		OutDir: filepath.Join(t.TempDir(), "release"), Now: now,
	}
	if mutate != nil {
		mutate(&o)
	}
	_, err := registry.Build(o)
	must(t, err)
	return o.OutDir
}

func (f *fixture) addLog(t testing.TB, dir string) {
	t.Helper()
	b := readBundle(t, dir)
	st := decode(t, b)
	must(t, tlog.Add(context.Background(), f.logURL, b, st.Predicate.Publisher))
	writeBundle(t, dir, b)
}

func readBundle(t testing.TB, dir string) *protobundle.Bundle {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, registry.BundleFile))
	must(t, err)
	var b protobundle.Bundle
	must(t, protojson.Unmarshal(data, &b))
	return &b
}

func writeBundle(t testing.TB, dir string, b *protobundle.Bundle) {
	t.Helper()
	data, err := statement.MarshalBundle(b)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, registry.BundleFile), data, 0o644))
}

func decode(t testing.TB, b *protobundle.Bundle) *statement.Statement {
	t.Helper()
	st, err := statement.Decode(b.GetDsseEnvelope().GetPayload())
	must(t, err)
	return st
}

// resign rewrites a release's statement through edit and signs it with key, keeping its store.
func resign(t testing.TB, dir string, key keys.PublisherPrivate, edit func(*statement.Statement)) {
	t.Helper()
	st := decode(t, readBundle(t, dir))
	st.Predicate.Publisher = key.Public()
	edit(st)
	payload, err := json.Marshal(st)
	must(t, err)
	signPayload(t, dir, key, payload)
}

func signPayload(t testing.TB, dir string, key keys.PublisherPrivate, payload []byte) {
	t.Helper()
	b, err := statement.Sign(payload, key)
	must(t, err)
	writeBundle(t, dir, b)
}

// copyRelease copies a release directory so a test can tamper with it freely.
func copyRelease(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "copy")
	must(t, os.CopyFS(out, os.DirFS(dir)))
	return out
}

func verifyDir(t testing.TB, trustDir, dir string) (*registry.Release, *registry.Report, error) {
	t.Helper()
	tr, err := registry.OpenTrust(trustDir)
	if err != nil {
		return nil, nil, err
	}
	return tr.VerifyDir(dir, now, false)
}

func blobOf(t testing.TB, dir, subjectPrefix string) string {
	t.Helper()
	for _, s := range decode(t, readBundle(t, dir)).Subject {
		if strings.HasPrefix(s.Name, subjectPrefix) {
			return filepath.Join(dir, "sha256", s.SHA256())
		}
	}
	t.Fatalf("no subject %s", subjectPrefix)
	return ""
}

var _ = bytes.Equal
var _ = cas.Sum

func newKey() keys.PublisherPrivate { return keys.NewPublisher() }
