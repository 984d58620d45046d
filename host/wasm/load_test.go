package wasm_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func TestLoadRefusals(t *testing.T) {
	isolations(t, func(t *testing.T, iso wasm.Isolation) {
		h := newHost(t, cached(wasm.Config{Isolation: iso}))
		ref, refDigest := testWord(t, "ref")
		bad, badDigest := testWord(t, "badimport")
		other := strings.Repeat("a", 64)
		withSHA := map[string]any{"module": map[string]any{"file": "ref.wasm", "sha256": other}}
		for k, v := range refParams {
			withSHA[k] = v
		}
		driver := wordManifest(t, "ref", refParams)
		driver.Kind = "driver"
		cases := []struct {
			name   string
			man    map[string]any
			module []byte
			pinned string
			code   string
		}{
			{"no pinned digest", refParams, ref, "", errcode.ModuleNotPinned},
			{"pinned digest not a digest", refParams, ref, "sha256:abc", errcode.ModuleNotPinned},
			{"bytes are not the pinned ones", refParams, append([]byte{}, ref[:len(ref)-1]...), refDigest, errcode.ModuleDigestMismatch},
			{"pinned digest of other bytes", refParams, ref, other, errcode.ModuleDigestMismatch},
			{"manifest names other bytes", withSHA, ref, refDigest, errcode.ModuleDigestMismatch},
			{"foreign import", refParams, bad, badDigest, errcode.WordModuleInvalid},
			{"not WebAssembly", refParams, []byte("#!/bin/sh\n"), sha256Of([]byte("#!/bin/sh\n")), errcode.WordModuleInvalid},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := h.Load(context.Background(), wordManifest(t, "ref", tc.man), tc.module, tc.pinned)
				if errcode.Code(err) != tc.code {
					t.Fatalf("err = %v, want %s", err, tc.code)
				}
			})
		}
		if _, err := h.Load(context.Background(), driver, ref, refDigest); errcode.Code(err) != errcode.WordModuleInvalid {
			t.Fatalf("driver manifest: %v", err)
		}
		// A refused load leaves the host working.
		res := load(t, h, wordManifest(t, "ref", refParams), ref, refDigest).Run(context.Background(), []byte(`{"name": "x"}`))
		if res.Outcome != wasm.Completed {
			t.Fatalf("%s %s", res.Code, res.Message)
		}
	})
}

func TestFreshStatePerCall(t *testing.T) {
	isolations(t, func(t *testing.T, iso wasm.Isolation) {
		module, digest := testWord(t, "evil")
		h := newHost(t, cached(wasm.Config{Isolation: iso, MaxWorkers: 1}))
		mod := load(t, h, wordManifest(t, "evil", evilManifest(t, "look", nil, nil)), module, digest)
		for i := range 3 {
			res := mod.Run(context.Background(), []byte(`{"attack": "counter"}`))
			if res.Outcome != wasm.Completed || string(res.Output) != `{"ok":true,"count":1}` {
				t.Fatalf("call %d: %s %s %s", i, res.Outcome, res.Code, res.Output)
			}
		}
	})
}

// TestMemoryRestoredPerCall runs a word that overwrites the data its module shipped and heap its
// runtime takes to be zero, more times than a pool keeps memories: every run must find both as a fresh
// instance has them, though its memory was an earlier run's, restored, and the data segments' copy
// skipped.
func TestMemoryRestoredPerCall(t *testing.T) {
	isolations(t, func(t *testing.T, iso wasm.Isolation) {
		module, digest := testWord(t, "evil")
		h := newHost(t, cached(wasm.Config{Isolation: iso, MaxWorkers: 1}))
		mod := load(t, h, wordManifest(t, "evil", evilManifest(t, "look", nil, nil)), module, digest)
		want := `{"ok":true,"stolen":"lexicon: data as the module shipped it"}`
		for i := range 12 {
			res := mod.Run(context.Background(), []byte(`{"attack": "scribble"}`))
			if res.Outcome != wasm.Completed || string(res.Output) != want {
				t.Fatalf("call %d: %s %s %s, want %s", i, res.Outcome, res.Code, res.Output, want)
			}
		}
	})
}

func TestConcurrentRuns(t *testing.T) {
	isolations(t, func(t *testing.T, iso wasm.Isolation) {
		module, digest := testWord(t, "ref")
		h := newHost(t, cached(wasm.Config{Isolation: iso, MaxWorkers: 2}))
		mod := load(t, h, wordManifest(t, "ref", refParams), module, digest)
		var wg sync.WaitGroup
		errs := make(chan string, 16)
		for i := range 16 {
			wg.Go(func() {
				res := mod.Run(context.Background(), mustJSON(t, map[string]any{"name": "n", "count": i}))
				if res.Outcome != wasm.Completed || !strings.Contains(string(res.Output), `"count":`+itoa(i+1)) {
					errs <- res.Code + " " + string(res.Output)
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatal(e)
		}
	})
}

func TestWorkerDeathIsContained(t *testing.T) {
	module, digest := testWord(t, "ref")
	h := newHost(t, cached(wasm.Config{MaxWorkers: 1}))
	mod := load(t, h, wordManifest(t, "ref", refParams), module, digest)
	wasm.KillWorkers(h)
	res := mod.Run(context.Background(), []byte(`{"name": "x"}`))
	if res.Outcome != wasm.Failed || res.Code != errcode.WordHostFailed {
		t.Fatalf("run on a dead worker: %s %s", res.Outcome, res.Code)
	}
	res = mod.Run(context.Background(), []byte(`{"name": "x"}`))
	if res.Outcome != wasm.Completed {
		t.Fatalf("the next run: %s %s %s", res.Outcome, res.Code, res.Message)
	}
}

func TestCancelStopsTheWord(t *testing.T) {
	isolations(t, func(t *testing.T, iso wasm.Isolation) {
		module, digest := testWord(t, "evil")
		h := newHost(t, cached(wasm.Config{Isolation: iso}))
		mod := load(t, h, wordManifest(t, "evil", evilManifest(t, "look", nil, nil)), module, digest)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := mod.Run(ctx, []byte(`{"attack": "loop"}`))
		if res.Code != errcode.WordCancelled {
			t.Fatalf("%s %s", res.Code, res.Message)
		}
	})
}

// TestCompileCache: a second process-worth of host finds the entry, and an entry altered where wazero's
// own CRC32 does not look (the function offsets) is rejected, deleted and rebuilt from verified bytes.
func TestCompileCache(t *testing.T) {
	isolations(t, func(t *testing.T, iso wasm.Isolation) {
		dir := t.TempDir()
		cfg := wasm.Config{Isolation: iso, CacheDir: filepath.Join(dir, "cache"), CacheKeyFile: filepath.Join(dir, "key")}
		module, digest := testWord(t, "ref")
		run := func(wantHits, wantMisses, wantRejected int64) {
			t.Helper()
			h := newHost(t, cfg)
			res := load(t, h, wordManifest(t, "ref", refParams), module, digest).Run(context.Background(), []byte(`{"name": "c"}`))
			if res.Outcome != wasm.Completed {
				t.Fatalf("%s %s", res.Code, res.Message)
			}
			if s := h.CacheStats(); s != (wasm.CacheStats{Hits: wantHits, Misses: wantMisses, Rejected: wantRejected}) {
				t.Fatalf("stats %+v, want %d/%d/%d", s, wantHits, wantMisses, wantRejected)
			}
			h.Close()
		}
		run(0, 1, 0)
		run(1, 0, 0)
		entries, _ := filepath.Glob(filepath.Join(dir, "cache", "*", digest+"-*.entry"))
		if len(entries) != 1 {
			t.Fatalf("entries %v", entries)
		}
		b, err := os.ReadFile(entries[0])
		if err != nil {
			t.Fatal(err)
		}
		// The entry holds wazero's file after a header line of magic, MAC and name. In wazero's file the
		// first function's offset (uint64) follows "WAZEVO", the version and the function count; CRC32
		// covers only the code, so wazero alone would accept the change.
		body := b[6+65+65:]
		off := 6 + 1 + int(body[6]) + 4
		binary.LittleEndian.PutUint64(body[off:], binary.LittleEndian.Uint64(body[off:])+16)
		if err := os.WriteFile(entries[0], b, 0o600); err != nil {
			t.Fatal(err)
		}
		run(0, 1, 1)
		run(1, 0, 0)
		// A byte of the compiled code itself: wazero's checksum would catch it, but wazero does not
		// checksum an entry the host vouches for (experimental.WithValidatedModule); the MAC catches it
		// first.
		if b, err = os.ReadFile(entries[0]); err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(entries[0], b, 0o600); err != nil {
			t.Fatal(err)
		}
		run(0, 1, 1)
		run(1, 0, 0)
	})
}

// TestCachedCodeRunsFromTheSealedMemfd: code loaded from the sealed compile cache is mapped, read and
// execute, from the sealed memfd the entry was verified into, not copied; code wazero reads from a file
// of its own cache, which anyone with the right to write it could change under the mapping, is copied.
func TestCachedCodeRunsFromTheSealedMemfd(t *testing.T) {
	// codeMaps returns the inodes of the code mappings (read and execute) of files whose name has file
	// in it: mappings of earlier loads may go while a test runs, as the GC releases them.
	codeMaps := func(t *testing.T, file string) map[string]bool {
		t.Helper()
		b, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		inodes := map[string]bool{}
		for line := range strings.SplitSeq(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 6 && f[1] == "r-xp" && strings.Contains(line, file) {
				inodes[f[4]] = true
			}
		}
		return inodes
	}
	added := func(before, after map[string]bool) (n int) {
		for inode := range after {
			if !before[inode] {
				n++
			}
		}
		return n
	}
	t.Run("sealed", func(t *testing.T) {
		dir := t.TempDir()
		cfg := wasm.Config{Isolation: wasm.InProcess, CacheDir: filepath.Join(dir, "cache"), CacheKeyFile: filepath.Join(dir, "key")}
		module, digest := testWord(t, "ref")
		for _, want := range []int{0, 1} { // a compile, then a load from the cache
			before := codeMaps(t, "memfd:lexicon-compile-cache")
			h := newHost(t, cfg)
			mod := load(t, h, wordManifest(t, "ref", refParams), module, digest)
			if res := mod.Run(context.Background(), []byte(`{"name": "m"}`)); res.Outcome != wasm.Completed {
				t.Fatalf("%s %s", res.Code, res.Message)
			}
			if got := added(before, codeMaps(t, "memfd:lexicon-compile-cache")); got != want {
				t.Fatalf("code mappings of the sealed memfd: %d, want %d", got, want)
			}
			mod.Close()
			h.Close()
		}
	})
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		module, _ := testWord(t, "ref")
		ctx := context.Background()
		for range 2 { // a compile, then a load from the cache's file (a new cache: not its memory)
			cache, err := wazero.NewCompilationCacheWithDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache))
			if _, err := rt.CompileModule(experimental.WithValidatedModule(ctx), module); err != nil {
				t.Fatal(err)
			}
			if n := len(codeMaps(t, dir)); n != 0 {
				t.Fatalf("%d code mappings of a cache file", n)
			}
			rt.Close(ctx)
			cache.Close(ctx)
		}
	})
}

// TestValidatedModuleKeyIsWazeros: host/wasm names the patched wazero's key by its value, so that it also
// builds against the release; the value must be the one the copy reads.
func TestValidatedModuleKeyIsWazeros(t *testing.T) {
	if wasm.ValidatedModuleKey != experimental.ValidatedModuleKey {
		t.Fatalf("host/wasm vouches with %q, wazero reads %q", wasm.ValidatedModuleKey, experimental.ValidatedModuleKey)
	}
}

// TestValidatedModuleValidatedOnAMiss: a module the caller vouches for is validated in full all the
// same whenever wazero does not find its compiled code, with either engine, so the vouching only ever
// skips checks of code this wazero compiled before.
func TestValidatedModuleValidatedOnAMiss(t *testing.T) {
	// One function typed () -> i32 whose body leaves an i64: decodable, invalid.
	invalid := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, // type section: () -> i32
		0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
		0x0a, 0x06, 0x01, 0x04, 0x00, 0x42, 0x00, 0x0b, // code section: i64.const 0; end
	}
	ctx := experimental.WithValidatedModule(context.Background())
	for name, cfg := range map[string]wazero.RuntimeConfig{
		"compiler":    wazero.NewRuntimeConfigCompiler(),
		"interpreter": wazero.NewRuntimeConfigInterpreter(),
	} {
		t.Run(name, func(t *testing.T) {
			cache, err := wazero.NewCompilationCacheWithDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			rt := wazero.NewRuntimeWithConfig(ctx, cfg.WithCompilationCache(cache))
			defer rt.Close(ctx)
			if _, err := rt.CompileModule(ctx, invalid); err == nil || !strings.Contains(err.Error(), "cannot use i64 as result") {
				t.Fatalf("compiled an invalid module the caller vouched for: %v", err)
			}
		})
	}
}

func TestCacheKeyFileMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if _, err := wasm.LoadCacheKey(key); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(key); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key created %v", fi.Mode())
	}
	os.Chmod(key, 0o644)
	if _, err := wasm.LoadCacheKey(key); errcode.Code(err) != errcode.KeyFileUntrusted {
		t.Fatalf("readable key: %v", err)
	}
	os.Chmod(key, 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(key, link)
	if _, err := wasm.LoadCacheKey(link); errcode.Code(err) != errcode.KeyFileUntrusted {
		t.Fatalf("symlinked key: %v", err)
	}
}

func TestIdleWorkersExit(t *testing.T) {
	module, digest := testWord(t, "ref")
	h := newHost(t, cached(wasm.Config{WorkerIdle: 300 * time.Millisecond}))
	mod := load(t, h, wordManifest(t, "ref", refParams), module, digest)
	exits := wasm.WorkerExits(h)
	if len(exits) != 1 {
		t.Fatalf("%d workers after a load", len(exits))
	}
	testkit.Wait(t, exits[0], "the idle worker to exit")
	if res := mod.Run(context.Background(), []byte(`{"name": "x"}`)); res.Outcome != wasm.Completed {
		t.Fatalf("run after the reap: %s %s", res.Code, res.Message)
	}
}
