package wasm_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// twins loads the two words of the twins module: twin_wipe, destructive, which empties a file beneath
// root, and twin_look, which reads it. extra capabilities go to both. They have the same memory limit,
// so the worker pool keys them on one module.
func twins(t *testing.T, h *wasm.Host, root string, extra ...map[string]any) (wipe, look *wasm.Module) {
	t.Helper()
	module, digest := testWord(t, "twins")
	twin := func(name, class string, caps []map[string]any) *wasm.Module {
		return load(t, h, wordManifest(t, name, map[string]any{
			"class": class,
			"params": json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}, "url": {"type": "string"}},
				"additionalProperties": false}`),
			"capabilities": append(caps, extra...),
			"module":       map[string]any{"file": "twins.wasm"},
		}), module, digest)
	}
	wipe = twin("twin_wipe", "destructive", []map[string]any{
		{"cap": "fs.read", "paths": []string{root}},
		{"cap": "fs.write", "paths": []string{root}, "max_bytes": 1024},
	})
	look = twin("twin_look", "look", []map[string]any{{"cap": "fs.read", "paths": []string{root}}})
	return wipe, look
}

// ranAs is the name a completed run of a twin says it ran as.
func ranAs(t *testing.T, res *wasm.Result) string {
	t.Helper()
	if res.Outcome != wasm.Completed {
		t.Fatalf("%s %s %q", res.Outcome, res.Code, res.Message)
	}
	var out struct{ Name string }
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatal(err)
	}
	return out.Name
}

// TestTwinsRunAsThemselves: two words on one module, a destructive twin that empties a file and a
// harmless one that reads it, tell themselves apart by their name at start. With the same memory limit
// they share one worker process and the code it compiled. Whichever of them ran before in that worker,
// and whichever instance the worker prepared for the next run, each run starts under its own word's
// name and with its own word's capabilities: after the destructive twin has run, the harmless twin
// reads the file and leaves it whole.
func TestTwinsRunAsThemselves(t *testing.T) {
	isolations(t, func(t *testing.T, iso wasm.Isolation) {
		root := testkit.SafeDir(t)
		file := filepath.Join(root, "precious")
		h := newHost(t, cached(wasm.Config{Isolation: iso, MaxWorkers: 1}))
		wipe, look := twins(t, h, root)
		params := mustJSON(t, map[string]string{"path": file})
		// The destructive twin first, so that the worker has run it and prepared its next instance for it;
		// then the harmless twin, twice; then the destructive one again after the harmless one.
		for i, mod := range []*wasm.Module{wipe, look, look, wipe, look} {
			name := mod.Manifest().Name
			writeFile(t, file, []byte("precious"), 0o644)
			res := mod.Run(context.Background(), params)
			if res.Outcome != wasm.Completed {
				t.Fatalf("run %d of %s: %s %s %q", i, name, res.Outcome, res.Code, res.Message)
			}
			if ran := ranAs(t, res); ran != name {
				t.Fatalf("run %d of %s ran as %s", i, name, ran)
			}
			wantCap, wantLeft := "fs.read", "precious"
			if mod == wipe {
				wantCap, wantLeft = "fs.write", ""
			}
			if len(res.Capabilities) != 1 || res.Capabilities[0].Cap != wantCap || !res.Capabilities[0].Allowed {
				t.Fatalf("run %d of %s made the calls %+v, want one allowed %s", i, name, res.Capabilities, wantCap)
			}
			if left, err := os.ReadFile(file); err != nil || string(left) != wantLeft {
				t.Fatalf("run %d of %s left the file %q (%v), want %q", i, name, left, err, wantLeft)
			}
		}
		if iso == wasm.Process {
			if pids := wasm.WorkerPIDs(h); len(pids) != 1 {
				t.Fatalf("the twins ran in %d workers; the test needs them to share one", len(pids))
			}
		}
	})
}

// TestTwinsDoNotShareRuns: a worker hosts concurrent runs of one word, and twins are two words. While a
// run of the harmless twin is in flight, the destructive twin's run gets a worker of its own, and when
// that run is cancelled and its worker killed, the harmless twin's run goes on and completes.
func TestTwinsDoNotShareRuns(t *testing.T) {
	s := newHoldServer(t)
	u, _ := url.Parse(s.URL)
	root := testkit.SafeDir(t)
	h := newHost(t, cached(wasm.Config{MaxWorkers: 2}))
	wipe, look := twins(t, h, root, map[string]any{"cap": "net.http", "hosts": []string{u.Host}, "timeout_ms": 600000})
	writeFile(t, filepath.Join(root, "f"), []byte("kept"), 0o644)
	held := make(chan *wasm.Result, 1)
	go func() {
		held <- look.Run(context.Background(), mustJSON(t, map[string]string{"path": filepath.Join(root, "f"), "url": s.URL + "/hold?id=look"}))
	}()
	testkit.Wait(t, s.arrived, "the harmless twin to call the server")
	before := wasm.WorkerPIDs(h)
	// The destructive twin is held too, until it is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	wiped := make(chan *wasm.Result, 1)
	go func() {
		wiped <- wipe.Run(ctx, mustJSON(t, map[string]string{"path": filepath.Join(root, "f"), "url": s.URL + "/hold?id=wipe"}))
	}()
	testkit.Wait(t, s.arrived, "the destructive twin to call the server")
	if after := wasm.WorkerPIDs(h); len(after) != 2 || len(before) != 1 {
		t.Fatalf("the twins' concurrent runs are in %d workers (%d before the second), want one each", len(after), len(before))
	}
	cancel()
	if res := testkit.Wait(t, wiped, "the destructive twin's run"); res.Code != errcode.WordCancelled {
		t.Fatalf("cancelled twin: %s %s %q", res.Outcome, res.Code, res.Message)
	}
	close(s.release)
	res := testkit.Wait(t, held, "the harmless twin's run")
	if ran := ranAs(t, res); ran != "twin_look" {
		t.Fatalf("the harmless twin ran as %s", ran)
	}
}
