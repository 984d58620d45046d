package runner_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/host/wasm"
)

// TestWarmCompilesTheVocabulary: warming puts the vocabulary's words in the compile cache, so a host
// started later (a new agent process) loads them from the cache without compiling, and warming again
// compiles nothing.
func TestWarmCompilesTheVocabulary(t *testing.T) {
	dir := t.TempDir()
	v := vocabtest.Build(t, helloModule(t, dir)).Open(t)
	cfg := wasm.Config{Isolation: wasm.InProcess, CacheDir: filepath.Join(dir, "cache"), CacheKeyFile: filepath.Join(dir, "cache.key")}
	newHost := func() *wasm.Host {
		h, err := wasm.New(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	h := newHost()
	(&runner.Runner{Host: h, Vocab: v}).Warm(t.Context())
	if s := h.CacheStats(); s != (wasm.CacheStats{Misses: 1}) {
		t.Fatalf("warm: %+v, want one compile", s)
	}
	(&runner.Runner{Host: h, Vocab: v}).Warm(t.Context())
	if s := h.CacheStats(); s != (wasm.CacheStats{Misses: 1}) {
		t.Fatalf("warm again: %+v, want nothing compiled", s)
	}
	h2 := newHost()
	w, _ := v.Word("hello")
	if _, err := (&runner.Runner{Host: h2, Vocab: v}).Load(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	if s := h2.CacheStats(); s != (wasm.CacheStats{Hits: 1}) {
		t.Fatalf("load in a new host: %+v, want a cache hit", s)
	}
}

// helloModule is the example hello word as a vocabulary module, its manifest written into dir.
func helloModule(t *testing.T, dir string) vocabtest.Module {
	t.Helper()
	module := filepath.Join("..", "..", "..", "build", "wasm", "examples", "hello.wasm")
	if _, err := os.Stat(module); err != nil {
		t.Fatalf("%s is missing: run `make wasm` first (%v)", module, err)
	}
	mf := filepath.Join(dir, "hello.json")
	if err := os.WriteFile(mf, []byte(`{"schema":"lexicon/manifest/v1","name":"hello","kind":"word","version":"1.0.0","class":"look",`+
		`"summary":"test","params":{"type":"object","additionalProperties":false},"output":{"type":"object"},"module":{"file":"hello.wasm"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return vocabtest.Module{Manifest: mf, File: module}
}
