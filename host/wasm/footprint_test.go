package wasm_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestLoadFromReadsAgainForANewWorker: a module loaded with LoadFrom is not held by the host. When its
// worker has exited for idleness, the next run reads the bytes from the source again, in a new worker,
// and runs on a fresh instance; a source that now gives other bytes makes the run fail with
// module.digest_mismatch instead of running them.
func TestLoadFromReadsAgainForANewWorker(t *testing.T) {
	module, digest := testWord(t, "evil")
	other, _ := testWord(t, "ref")
	h := newHost(t, cached(wasm.Config{MaxWorkers: 1, WorkerIdle: 200 * time.Millisecond}))
	var reads atomic.Int32
	var swapped atomic.Bool
	source := func() ([]byte, error) {
		reads.Add(1)
		if swapped.Load() {
			return other, nil
		}
		return module, nil
	}
	mod, err := h.LoadFrom(context.Background(), wordManifest(t, "evil", evilManifest(t, "look", nil, nil)), digest, source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mod.Close)
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d reads to load", n)
	}
	counter := func() *wasm.Result { return mod.Run(context.Background(), []byte(`{"attack": "counter"}`)) }
	for i := range 2 { // the worker that loaded it runs it, each time on a fresh instance
		if res := counter(); res.Outcome != wasm.Completed || string(res.Output) != `{"ok":true,"count":1}` {
			t.Fatalf("run %d: %s %s %s", i, res.Outcome, res.Code, res.Output)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d reads with the worker alive", n)
	}
	for _, exited := range wasm.WorkerExits(h) {
		testkit.Wait(t, exited, "the idle worker to exit")
	}
	if res := counter(); res.Outcome != wasm.Completed || string(res.Output) != `{"ok":true,"count":1}` {
		t.Fatalf("run in a new worker: %s %s %s %s", res.Outcome, res.Code, res.Message, res.Output)
	}
	if n := reads.Load(); n != 2 {
		t.Fatalf("%d reads after the worker exited, want 2", n)
	}
	swapped.Store(true)
	for _, exited := range wasm.WorkerExits(h) {
		testkit.Wait(t, exited, "the idle worker to exit")
	}
	if res := counter(); res.Code != errcode.ModuleDigestMismatch {
		t.Fatalf("run from swapped bytes: %s %s %s", res.Outcome, res.Code, res.Message)
	}
}

// TestWarmFillsTheCache: Warm compiles a module into the compile cache without loading it, so a new
// host's first load of it is a cache hit; warming a cached module compiles nothing.
func TestWarmFillsTheCache(t *testing.T) {
	isolations(t, func(t *testing.T, iso wasm.Isolation) {
		dir := t.TempDir()
		cfg := wasm.Config{Isolation: iso, CacheDir: filepath.Join(dir, "cache"), CacheKeyFile: filepath.Join(dir, "key")}
		module, digest := testWord(t, "ref")
		m := wordManifest(t, "ref", refParams)
		source := func() ([]byte, error) { return module, nil }
		h := newHost(t, cfg)
		if err := h.Warm(context.Background(), m, digest, source); err != nil {
			t.Fatal(err)
		}
		if s := h.CacheStats(); s != (wasm.CacheStats{Misses: 1}) {
			t.Fatalf("first warm: %+v", s)
		}
		if err := h.Warm(context.Background(), m, digest, source); err != nil {
			t.Fatal(err)
		}
		if s := h.CacheStats(); s != (wasm.CacheStats{Misses: 1}) {
			t.Fatalf("second warm compiled again: %+v", s)
		}
		bad := func() ([]byte, error) { return module[:len(module)-1], nil }
		if err := h.Warm(context.Background(), wordManifest(t, "other", refParams), sha256Of([]byte("other")), bad); errcode.Code(err) != errcode.ModuleDigestMismatch {
			t.Fatalf("warm of bytes that are not the pinned ones: %v", err)
		}
		h.Close()
		h2 := newHost(t, cfg)
		res := load(t, h2, m, module, digest).Run(context.Background(), []byte(`{"name": "w"}`))
		if res.Outcome != wasm.Completed {
			t.Fatalf("%s %s", res.Code, res.Message)
		}
		if s := h2.CacheStats(); s != (wasm.CacheStats{Hits: 1}) {
			t.Fatalf("load after warm: %+v", s)
		}
	})
}
