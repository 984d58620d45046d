package rollouts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// clock is a test's time: it moves only when the test moves it.
type clock struct{ t time.Time }

func (c *clock) now() time.Time                { return c.t }
func (c *clock) add(d time.Duration) time.Time { c.t = c.t.Add(d); return c.t }

// missFixture is a job rollout of noop over n simulated nodes, one stage, one node at a time, and an
// engine on a test clock.
type missFixture struct {
	t     *testing.T
	st    store.Store
	nodes []store.Node
	ro    store.Rollout
	e     *rollouts.Engine
	clock *clock
}

func newMissFixture(t *testing.T, backend string, n, budget int, timeout time.Duration) *missFixture {
	return newParallelFixture(t, backend, n, 1, budget, timeout)
}

func newParallelFixture(t *testing.T, backend string, n, parallel, budget int, timeout time.Duration) *missFixture {
	url := filepath.Join(t.TempDir(), "plane.db")
	if backend == "postgres" {
		url = storetest.PostgresURL(t)
	}
	st := storetest.Open(t, url)
	nodes := enrolSimulated(t, st, n)
	steps, stages, err := rollouts.Plan(nodes, "all", rollouts.Staging{})
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
	ro, err := st.RolloutCreate(context.Background(), store.RolloutCreateParams{Kind: store.RolloutJob, Word: "noop", Params: json.RawMessage(`{}`),
		Selector: "all", Stages: stages, MaxParallel: parallel, ErrorBudget: budget, StepTimeout: timeout, Steps: steps, By: "tester", Now: c.now()})
	if err != nil {
		t.Fatal(err)
	}
	e := &rollouts.Engine{Store: st, Words: benchWords{},
		EngineBase: services.EngineBase{Holder: "replica-a", Now: c.now, LeaseTTL: time.Hour, Log: slog.New(slog.DiscardHandler)}}
	return &missFixture{t: t, st: st, nodes: nodes, ro: ro, e: e, clock: c}
}

func (f *missFixture) pass() store.Rollout {
	f.t.Helper()
	if err := f.e.Pass(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	ro, err := f.st.RolloutGet(context.Background(), store.RolloutGetParams{ID: f.ro.ID})
	if err != nil {
		f.t.Fatal(err)
	}
	return ro
}

// answer claims every queued job and finishes it: failed with code word.failed on the nodes in fail,
// completed elsewhere. It returns how many it answered.
func (f *missFixture) answer(fail map[string]bool) int {
	f.t.Helper()
	ctx := context.Background()
	res, err := f.st.JobList(ctx, store.JobListParams{State: store.JobQueued, Limit: store.MaxListLimit})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, j := range res.Jobs {
		got, err := f.st.JobClaim(ctx, store.JobClaimParams{NodeID: j.NodeID})
		if err != nil || got == nil {
			f.t.Fatalf("claim: %v %v", got, err)
		}
		p := store.JobFinishParams{ID: got.ID, NodeID: j.NodeID, Outcome: store.JobCompleted, Now: f.clock.now()}
		if fail[j.NodeID] {
			p.Outcome, p.Code, p.Message = store.JobFailed, "word.failed", "disk full"
		}
		if _, err := f.st.JobFinish(ctx, p); err != nil {
			f.t.Fatal(err)
		}
	}
	return len(res.Jobs)
}

// run passes and answers until the rollout stops running.
func (f *missFixture) run(fail map[string]bool) store.Rollout {
	f.t.Helper()
	for range 100 {
		ro := f.pass()
		if ro.State != store.RolloutRunning {
			return ro
		}
		f.answer(fail)
		f.clock.add(time.Second)
	}
	f.t.Fatal("the rollout never stopped")
	return store.Rollout{}
}

func actions(ro store.Rollout) string {
	var out []string
	for _, e := range ro.Events {
		out = append(out, e.Action)
	}
	return strings.Join(out, ",")
}

func eachBackend(t *testing.T, fn func(t *testing.T, backend string)) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) { fn(t, backend) })
	}
}

// TestStepTimeoutHaltsTheRollout: a node whose job is never answered within the step's timeout is a
// miss: its step fails naming the phase and the timeout, its job is marked failed so a late answer
// cannot pass it, the rollout halts at that node, and the node after it is never started.
func TestStepTimeoutHaltsTheRollout(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		f := newMissFixture(t, backend, 3, 0, time.Minute)
		ro := f.pass()
		first := ro.Steps[0]
		if first.State != store.StepRunning || first.JobID == "" {
			t.Fatalf("first step after a pass: %+v", first)
		}
		f.clock.add(time.Minute) // not past the timeout yet
		if ro = f.pass(); ro.State != store.RolloutRunning || ro.Steps[0].State != store.StepRunning {
			t.Fatalf("timed out early: %s %+v", ro.State, ro.Steps[0])
		}
		f.clock.add(time.Second)
		ro = f.pass()
		if ro.State != store.RolloutHalted || ro.HaltNode != first.NodeName || ro.Misses != 1 ||
			!strings.Contains(ro.HaltReason, "change did not report back within 1m0s") {
			t.Fatalf("rollout after the timeout: %s at %q (%q), %d misses", ro.State, ro.HaltNode, ro.HaltReason, ro.Misses)
		}
		if st := ro.Steps[0]; st.State != store.StepFailed || st.Reason != ro.HaltReason || st.FinishedAt.IsZero() {
			t.Fatalf("timed-out step: %+v", st)
		}
		for _, st := range ro.Steps[1:] {
			if st.State != store.StepPending || !st.StartedAt.IsZero() {
				t.Fatalf("%s was started after the halt: %+v", st.NodeName, st)
			}
		}
		j, err := f.st.JobGet(context.Background(), store.JobGetParams{ID: first.JobID})
		if err != nil || j.State != store.JobFailed {
			t.Fatalf("the timed-out job: %+v %v", j, err)
		}
		if got := actions(ro); got != "start,halt" {
			t.Fatalf("events %s", got)
		}
		if ev := ro.Events[1]; ev.Actor != "plane" || !strings.HasPrefix(ev.Detail, first.NodeName+": ") {
			t.Fatalf("halt event %+v", ev)
		}
		if res, _ := f.st.JobList(context.Background(), store.JobListParams{NodeID: ro.Steps[1].NodeID}); len(res.Jobs) != 0 {
			t.Fatalf("a node after the halt got jobs: %+v", res.Jobs)
		}
	})
}

// TestPausedTimeIsNotCountedAgainstAStep: a step under way when its rollout is paused for longer than
// the step timeout is judged on its own time after the resume: it passes when its node answers.
func TestPausedTimeIsNotCountedAgainstAStep(t *testing.T) {
	f := newMissFixture(t, "sqlite", 1, 0, time.Minute)
	ctx := context.Background()
	f.pass()
	if _, err := f.st.RolloutSetState(ctx, store.RolloutSetStateParams{ID: f.ro.ID, From: []store.RolloutState{store.RolloutRunning},
		To: store.RolloutPaused, By: "tester", Action: "pause", Now: f.clock.now()}); err != nil {
		t.Fatal(err)
	}
	f.clock.add(time.Hour)
	if _, err := f.st.RolloutSetState(ctx, store.RolloutSetStateParams{ID: f.ro.ID, From: []store.RolloutState{store.RolloutPaused},
		To: store.RolloutRunning, By: "tester", Action: "resume", Now: f.clock.now()}); err != nil {
		t.Fatal(err)
	}
	if ro := f.pass(); ro.State != store.RolloutRunning || ro.Steps[0].State != store.StepRunning {
		t.Fatalf("after the resume: %s %+v", ro.State, ro.Steps[0])
	}
	if ro := f.run(nil); ro.State != store.RolloutCompleted || ro.Misses != 0 {
		t.Fatalf("rollout %s (%s), %d misses", ro.State, ro.HaltReason, ro.Misses)
	}
	// Past the timeout counted from the resume, it is a miss again.
	g := newMissFixture(t, "sqlite", 1, 0, time.Minute)
	g.pass()
	g.clock.add(2 * time.Minute)
	if ro := g.pass(); ro.State != store.RolloutHalted {
		t.Fatalf("a step past its timeout without a pause: %s", ro.State)
	}
}

// TestErrorBudget: with --error-budget k, k failed nodes are misses the rollout goes on past (each
// recorded with its node and the job's code), and the k+1st halts it at that node, leaving the nodes
// after it untouched.
func TestErrorBudget(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		for _, k := range []int{1, 2} {
			t.Run(fmt.Sprintf("budget %d", k), func(t *testing.T) {
				// Nodes 0, 2, 4... fail: with budget k, node 2k halts it.
				n := 2*k + 2
				f := newMissFixture(t, backend, n, k, time.Hour)
				fail := map[string]bool{}
				for i := 0; i < n; i += 2 {
					fail[f.nodes[i].ID] = true
				}
				ro := f.run(fail)
				halt := f.nodes[2*k].Name
				if ro.State != store.RolloutHalted || ro.Misses != k+1 || ro.HaltNode != halt ||
					!strings.Contains(ro.HaltReason, "change noop failed: word.failed: disk full") {
					t.Fatalf("rollout %s at %q (%q), %d misses; want halted at %s with %d", ro.State, ro.HaltNode, ro.HaltReason, ro.Misses, halt, k+1)
				}
				for i, st := range ro.Steps {
					want := store.StepPassed
					switch {
					case i > 2*k:
						want = store.StepPending
					case fail[st.NodeID]:
						want = store.StepFailed
					}
					if st.State != want {
						t.Fatalf("step %d (%s): %s, want %s", i, st.NodeName, st.State, want)
					}
				}
				want := "start" + strings.Repeat(",miss", k) + ",halt"
				if got := actions(ro); got != want {
					t.Fatalf("events %s, want %s", got, want)
				}
				for i, ev := range ro.Events[1:] {
					if !strings.HasPrefix(ev.Detail, f.nodes[2*i].Name+": ") || !strings.Contains(ev.Detail, "word.failed") {
						t.Fatalf("event %d: %+v", i+1, ev)
					}
				}
			})
		}
		t.Run("budget not spent", func(t *testing.T) {
			f := newMissFixture(t, backend, 3, 1, time.Hour)
			ro := f.run(map[string]bool{f.nodes[1].ID: true})
			if ro.State != store.RolloutCompleted || ro.Misses != 1 || ro.HaltNode != "" {
				t.Fatalf("rollout %s, %d misses, halted at %q", ro.State, ro.Misses, ro.HaltNode)
			}
			if got := actions(ro); got != "start,miss,complete" {
				t.Fatalf("events %s", got)
			}
		})
	})
}

// TestAbortLeavesUnreachedNodesUntouched: aborting a rollout with two steps under way keeps the one
// whose node took its job as it is (reached), skips the one whose job no node took yet, cancelling
// that job, and skips the pending one; the engine then touches nothing, and a second abort is refused.
func TestAbortLeavesUnreachedNodesUntouched(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		f := newParallelFixture(t, backend, 3, 2, 0, time.Hour)
		ctx := context.Background()
		ro := f.pass()
		if ro.Steps[0].JobID == "" || ro.Steps[1].JobID == "" || ro.Steps[2].State != store.StepPending {
			t.Fatalf("after a pass: %+v", ro.Steps)
		}
		taken := ro.Steps[0]
		if got, err := f.st.JobClaim(ctx, store.JobClaimParams{NodeID: taken.NodeID}); err != nil || got == nil || got.ID != taken.JobID {
			t.Fatalf("claim: %v %v", got, err)
		}
		ro, err := rollouts.Abort(ctx, f.st, f.ro.ID, "tok-operator", f.clock.now())
		if err != nil {
			t.Fatal(err)
		}
		if ro.State != store.RolloutAborted || ro.Steps[0].State != store.StepRunning || ro.Steps[1].State != store.StepSkipped || ro.Steps[2].State != store.StepSkipped {
			t.Fatalf("after the abort: %s %+v", ro.State, ro.Steps)
		}
		if got := actions(ro); got != "start,abort" {
			t.Fatalf("events %s", got)
		}
		skipped := ro.Steps[1]
		if j, err := f.st.JobGet(ctx, store.JobGetParams{ID: skipped.JobID}); err != nil || j.State != store.JobCancelled {
			t.Fatalf("the skipped step's job: %+v %v", j, err)
		}
		if after := f.pass(); !reflect.DeepEqual(after.Steps, ro.Steps) {
			t.Fatalf("the engine touched an aborted rollout: %+v", after.Steps)
		}
		_, err = rollouts.Abort(ctx, f.st, f.ro.ID, "tok-operator", f.clock.now())
		if !errcode.Has(err, errcode.RolloutWrongState) {
			t.Fatalf("abort twice: %v", err)
		}
	})
}

// TestAbortCancelsAQueuedJob: a step whose job is queued but not taken is skipped and its job
// cancelled, so the node never runs it.
func TestAbortCancelsAQueuedJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		f := newMissFixture(t, backend, 2, 0, time.Hour)
		ctx := context.Background()
		ro := f.pass()
		queued := ro.Steps[0]
		if queued.JobID == "" {
			t.Fatalf("no job: %+v", queued)
		}
		ro, err := rollouts.Abort(ctx, f.st, f.ro.ID, "tok-operator", f.clock.now())
		if err != nil {
			t.Fatal(err)
		}
		if st := ro.Steps[0]; st.State != store.StepSkipped || !strings.Contains(st.Reason, "aborted before the node took its change job") {
			t.Fatalf("step %+v", st)
		}
		j, err := f.st.JobGet(ctx, store.JobGetParams{ID: queued.JobID})
		if err != nil || j.State != store.JobCancelled {
			t.Fatalf("job %+v %v", j, err)
		}
		if got, err := f.st.JobClaim(ctx, store.JobClaimParams{NodeID: queued.NodeID}); err != nil || got != nil {
			t.Fatalf("the node was handed %+v %v", got, err)
		}
	})
}
