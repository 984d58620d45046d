package wasm_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// freshCache is a host config with a compile cache of its own, empty, and InterpretUncached on.
func freshCache(t *testing.T) wasm.Config {
	dir := t.TempDir()
	return wasm.Config{CacheDir: filepath.Join(dir, "cache"), CacheKeyFile: filepath.Join(dir, "key"), InterpretUncached: true}
}

// TestInterpretUncachedLook: a look word with no compiled code in the cache runs on the interpreter,
// with the same answer, while the module is compiled into the cache in the background; its next run
// loads the compiled code. A change word is compiled before its first run, as without the option.
func TestInterpretUncachedLook(t *testing.T) {
	ctx := context.Background()
	module, digest := testWord(t, "evil")
	h := newHost(t, freshCache(t))
	m := wordManifest(t, "evil", evilManifest(t, "look", nil, nil))
	mod := load(t, h, m, module, digest)
	counter := []byte(`{"attack": "counter"}`)
	want := `{"ok":true,"count":1}`
	if res := mod.Run(ctx, counter); res.Outcome != wasm.Completed || string(res.Output) != want {
		t.Fatalf("first run: %s %s %s", res.Outcome, res.Code, res.Output)
	}
	if s := h.CacheStats(); s.Interpreted != 1 || s.Hits != 0 {
		t.Fatalf("after the first run: %+v, want one load on the interpreter and no compiled code", s)
	}
	// Warm queues behind the compile the first run started, or does it itself: either way the cache
	// holds the module when it returns, compiled once.
	if err := h.Warm(ctx, m, digest, func() ([]byte, error) { return module, nil }); err != nil {
		t.Fatal(err)
	}
	if s := h.CacheStats(); s != (wasm.CacheStats{Misses: 1, Interpreted: 1}) {
		t.Fatalf("after the warm: %+v", s)
	}
	// The worker that interpreted retired after its run: the next run loads the compiled code, in a
	// fresh instance all the same.
	for range 2 {
		if res := mod.Run(ctx, counter); res.Outcome != wasm.Completed || string(res.Output) != want {
			t.Fatalf("compiled run: %s %s %s", res.Outcome, res.Code, res.Output)
		}
	}
	if s := h.CacheStats(); s != (wasm.CacheStats{Hits: 1, Misses: 1, Interpreted: 1}) {
		t.Fatalf("after the compiled runs: %+v", s)
	}

	// A change word on the same module is compiled before it runs: only a look is interpreted.
	h2 := newHost(t, freshCache(t))
	change := load(t, h2, wordManifest(t, "evil", evilManifest(t, "change", nil, nil)), module, digest)
	if res := change.Run(ctx, counter); res.Outcome != wasm.Completed || string(res.Output) != want {
		t.Fatalf("change word: %s %s %s", res.Outcome, res.Code, res.Output)
	}
	if s := h2.CacheStats(); s != (wasm.CacheStats{Misses: 1}) {
		t.Fatalf("change word: %+v, want one compile and nothing interpreted", s)
	}
}

// TestInterpretedLookStoppedAtDeadlineRunsCompiled: a look word stopped at its deadline on the
// interpreter is run again on compiled code, and the call answers with that run. The word hangs while
// its clock is before a time the test gives it, which the interpreted run starts well before and its
// deadline passes, so the answer can only come from the second run.
func TestInterpretedLookStoppedAtDeadlineRunsCompiled(t *testing.T) {
	module, digest := testWord(t, "evil")
	root := testkit.SafeDir(t)
	const wall = 4 * time.Second
	h := newHost(t, freshCache(t))
	mod := load(t, h, wordManifest(t, "evil", evilManifest(t, "look", []map[string]any{
		{"cap": "fs.read", "paths": []string{root}},
	}, map[string]any{"wall_time_ms": wall.Milliseconds()})), module, digest)
	until := filepath.Join(root, "until")
	writeFile(t, until, []byte(time.Now().Add(wall-time.Second).Format(time.RFC3339Nano)), 0o644)
	in, _ := json.Marshal(map[string]any{"attack": "hang_until", "path": until})
	res := mod.Run(context.Background(), in)
	if res.Outcome != wasm.Completed || string(res.Output) != `{"ok":true}` {
		t.Fatalf("run: %s %s %s %s", res.Outcome, res.Code, res.Message, res.Output)
	}
	// Both runs' calls are on record.
	var calls []string
	for _, c := range res.Capabilities {
		calls = append(calls, c.Cap)
	}
	if want := []string{"fs.read", "fs.read"}; !slices.Equal(calls, want) {
		t.Fatalf("calls: %v, want the interpreted run's read and the compiled run's", calls)
	}
	if s := h.CacheStats(); s.Interpreted != 1 || s.Hits+s.Misses < 1 {
		t.Fatalf("stats: %+v, want one load on the interpreter and compiled code after it", s)
	}
}
