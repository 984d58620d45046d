package wasm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// holdServer answers /hold?id=N with "answer-N", once the test lets it: a word calling it is held in
// flight, inside its capability call, for as long as the test needs it running.
type holdServer struct {
	*httptest.Server
	arrived chan string   // the id of each request, as it arrives
	release chan struct{} // closed to let every held request answer
}

func newHoldServer(t *testing.T) *holdServer {
	s := &holdServer{arrived: make(chan string, 16), release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		s.arrived <- id
		select {
		case <-s.release:
			fmt.Fprintf(w, "answer-%s", id)
		case <-r.Context().Done(): // the run was stopped
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// heldWord is the evil word allowed to call s, with the given wall time and memory limit. The pool keys
// its workers on the module's digest and memory limit, not the wall time: two heldWords with the same
// memory are the same word to it, sharing a worker, and two with different memory are different words.
func (s *holdServer) heldWord(t *testing.T, h *wasm.Host, wallMS, memoryMiB int) *wasm.Module {
	t.Helper()
	module, digest := testWord(t, "evil")
	u, _ := url.Parse(s.URL)
	caps := []map[string]any{{"cap": "net.http", "hosts": []string{u.Host}, "timeout_ms": 600000}}
	limits := map[string]any{"wall_time_ms": wallMS, "memory_mib": memoryMiB}
	return load(t, h, wordManifest(t, "evil", evilManifest(t, "look", caps, limits)), module, digest)
}

// hold starts a run of mod that calls the server as id, and waits until the call has reached it.
func (s *holdServer) hold(t *testing.T, mod *wasm.Module, id string) <-chan *wasm.Result {
	t.Helper()
	done := make(chan *wasm.Result, 1)
	params := mustJSON(t, map[string]any{"attack": "http", "url": s.URL + "/hold?id=" + id})
	go func() { done <- mod.Run(context.Background(), params) }()
	if got := testkit.Wait(t, s.arrived, "run "+id+" to call the server"); got != id {
		t.Fatalf("the server got run %s before run %s", got, id)
	}
	return done
}

func stolen(t *testing.T, res *wasm.Result) string {
	t.Helper()
	if res.Outcome != wasm.Completed {
		t.Fatalf("%s %s: %s", res.Outcome, res.Code, res.Message)
	}
	var out struct{ Stolen string }
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatal(err)
	}
	return out.Stolen
}

// TestConcurrentRunsShareAWorker: concurrent runs of one word are instances in one worker process, up to
// RunsPerWorker of them, each fresh and each getting the answers to its own capability calls.
func TestConcurrentRunsShareAWorker(t *testing.T) {
	s := newHoldServer(t)
	h := newHost(t, cached(wasm.Config{MaxWorkers: 4}))
	mod := s.heldWord(t, h, 600000, 64)
	var held []<-chan *wasm.Result
	for i := range wasm.RunsPerWorker - 1 {
		held = append(held, s.hold(t, mod, fmt.Sprint(i)))
	}
	if pids := wasm.WorkerPIDs(h); len(pids) != 1 {
		t.Fatalf("%d concurrent runs of one word in %d workers, want 1", len(held), len(pids))
	}
	// One more run, in the same worker while the others are in flight, starts from a fresh instance.
	for range 2 {
		res := mod.Run(context.Background(), []byte(`{"attack": "counter"}`))
		if res.Outcome != wasm.Completed || string(res.Output) != `{"ok":true,"count":1}` {
			t.Fatalf("run beside %d others: %s %s %s", len(held), res.Outcome, res.Code, res.Output)
		}
	}
	if pids := wasm.WorkerPIDs(h); len(pids) != 1 {
		t.Fatalf("%d workers after a run beside the others, want 1", len(pids))
	}
	// A worker hosts at most RunsPerWorker runs; the next goes to a worker of its own.
	for i := len(held); i < wasm.RunsPerWorker+1; i++ {
		held = append(held, s.hold(t, mod, fmt.Sprint(i)))
	}
	if pids := wasm.WorkerPIDs(h); len(pids) != 2 {
		t.Fatalf("%d concurrent runs in %d workers, want 2", len(held), len(pids))
	}
	close(s.release)
	for i, done := range held {
		res := testkit.Wait(t, done, fmt.Sprint("run ", i))
		if got, want := stolen(t, res), fmt.Sprint("answer-", i); got != want {
			t.Fatalf("run %d got %q, want its own answer %q", i, got, want)
		}
		if len(res.Capabilities) != 1 || !res.Capabilities[0].Allowed {
			t.Fatalf("run %d's capability list: %+v", i, res.Capabilities)
		}
	}
}

// TestRunawayStopsOnlyItsWorker: a run past its deadline is killed with its worker. A run of the same
// word sharing that worker ends too, reported as word.sibling_stopped, never as completed; a run of
// another word, in its own worker, is untouched.
func TestRunawayStopsOnlyItsWorker(t *testing.T) {
	s := newHoldServer(t)
	h := newHost(t, cached(wasm.Config{MaxWorkers: 2}))
	patient := s.heldWord(t, h, 600000, 64) // word X
	runaway := s.heldWord(t, h, 300, 64)    // word X too: same module and memory, a shorter wall time
	other := s.heldWord(t, h, 600000, 32)   // word Y
	xDone := s.hold(t, patient, "x")
	yDone := s.hold(t, other, "y")
	pids := wasm.WorkerPIDs(h)
	if len(pids) != 2 {
		t.Fatalf("X and Y run in %d workers, want 2", len(pids))
	}
	// Both workers are taken (MaxWorkers 2): the runaway can only join X's.
	res := runaway.Run(context.Background(), []byte(`{"attack": "loop"}`))
	if res.Code != errcode.WordDeadlineExceeded {
		t.Fatalf("runaway: %s %s %s", res.Outcome, res.Code, res.Message)
	}
	res = testkit.Wait(t, xDone, "the run sharing the runaway's worker")
	if res.Outcome != wasm.Failed || res.Code != errcode.WordSiblingStopped {
		t.Fatalf("run beside the runaway: %s %s %s", res.Outcome, res.Code, res.Message)
	}
	if len(res.Output) != 0 {
		t.Fatalf("the stopped run reports output %s", res.Output)
	}
	left := wasm.WorkerPIDs(h)
	if len(left) != 1 || !slices.Contains(pids, left[0]) {
		t.Fatalf("workers %v after the runaway, from %v: want Y's alone", left, pids)
	}
	close(s.release)
	if got := stolen(t, testkit.Wait(t, yDone, "the run of the other word")); got != "answer-y" {
		t.Fatalf("Y got %q", got)
	}
	// X runs again, in a new worker.
	if res := patient.Run(context.Background(), []byte(`{"attack": "counter"}`)); res.Outcome != wasm.Completed {
		t.Fatalf("X after the runaway: %s %s %s", res.Outcome, res.Code, res.Message)
	}
}

// TestWorkerCrashEndsAllItsRuns: a worker that dies under several runs ends every one of them with
// word.host_failed, not as stopped by a sibling and not completed; the next run gets a new worker.
func TestWorkerCrashEndsAllItsRuns(t *testing.T) {
	s := newHoldServer(t)
	h := newHost(t, cached(wasm.Config{MaxWorkers: 1}))
	mod := s.heldWord(t, h, 600000, 64)
	var held []<-chan *wasm.Result
	for i := range 3 {
		held = append(held, s.hold(t, mod, fmt.Sprint(i)))
	}
	wasm.KillWorkers(h)
	for i, done := range held {
		res := testkit.Wait(t, done, fmt.Sprint("run ", i))
		if res.Outcome != wasm.Failed || res.Code != errcode.WordHostFailed {
			t.Fatalf("run %d in the crashed worker: %s %s %s", i, res.Outcome, res.Code, res.Message)
		}
	}
	res := mod.Run(context.Background(), []byte(`{"attack": "counter"}`))
	if res.Outcome != wasm.Completed || string(res.Output) != `{"ok":true,"count":1}` {
		t.Fatalf("run after the crash: %s %s %s", res.Outcome, res.Code, res.Output)
	}
}
