package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
)

// sharedCache is a compile cache all tests share, so each test word compiles once per test run.
var sharedCache struct{ dir, key string }

func TestMain(m *testing.M) {
	wasm.ServeWorkerIfChild()
	if raw := os.Getenv(machineEnv); raw != "" {
		os.Exit(machineChild(raw)) // a machine test's node (machine_test.go)
	}
	if iso := os.Getenv(firstCallEnv); iso != "" {
		os.Exit(firstCall(iso)) // BenchmarkFirstCall's fresh process
	}
	dir, err := os.MkdirTemp("", "lexicon-wasm-test-")
	if err != nil {
		panic(err)
	}
	sharedCache.dir, sharedCache.key = filepath.Join(dir, "cache"), filepath.Join(dir, "cache.key")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cached returns cfg using the shared compile cache.
func cached(cfg wasm.Config) wasm.Config {
	cfg.CacheDir, cfg.CacheKeyFile = sharedCache.dir, sharedCache.key
	return cfg
}

// testWord returns a module built by `make wasm` from testdata, and its sha256.
func testWord(t testing.TB, name string) ([]byte, string) {
	t.Helper()
	p := filepath.Join("..", "..", "build", "wasm", "testdata", name+".wasm")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%s is missing: run `make wasm` first (%v)", p, err)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// wordManifest builds a word manifest; extra is merged into the top-level object.
func wordManifest(t testing.TB, name string, extra map[string]any) *manifest.Manifest {
	t.Helper()
	doc := map[string]any{
		"schema": manifest.SchemaV1, "name": name, "kind": "word", "version": "1.0.0", "class": "look",
		"summary": "A word under test.",
		"params":  json.RawMessage(`{"type": "object", "additionalProperties": false}`),
		"output":  json.RawMessage(`{"type": "object"}`),
		"module":  map[string]any{"file": name + ".wasm"},
	}
	for k, v := range extra {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(b)
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	return m
}

// isolations runs f once per isolation, so every behaviour is proven in both.
func isolations(t *testing.T, f func(t *testing.T, iso wasm.Isolation)) {
	for _, iso := range []struct {
		name string
		iso  wasm.Isolation
	}{{"process", wasm.Process}, {"inprocess", wasm.InProcess}} {
		t.Run(iso.name, func(t *testing.T) { f(t, iso.iso) })
	}
}

func newHost(t testing.TB, cfg wasm.Config) *wasm.Host {
	t.Helper()
	h, err := wasm.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func load(t testing.TB, h *wasm.Host, m *manifest.Manifest, module []byte, digest string) *wasm.Module {
	t.Helper()
	mod, err := h.Load(context.Background(), m, module, digest)
	if err != nil {
		t.Fatalf("Load %s: %v", m.Name, err)
	}
	t.Cleanup(mod.Close)
	return mod
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func sha256Of(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func itoa(i int) string { return strconv.Itoa(i) }
