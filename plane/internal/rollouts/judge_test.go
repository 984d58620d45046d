package rollouts_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// claim hands the step's node its queued job, as an agent polling would.
func (f *missFixture) claim(st store.RolloutStep) {
	f.t.Helper()
	got, err := f.st.JobClaim(context.Background(), store.JobClaimParams{NodeID: st.NodeID})
	if err != nil || got == nil || got.ID != st.JobID {
		f.t.Fatalf("claim on %s: %+v %v", st.NodeName, got, err)
	}
}

// finish ends the step's claimed job: completed, or failed with word.failed.
func (f *missFixture) finish(st store.RolloutStep, failed bool) {
	f.t.Helper()
	p := store.JobFinishParams{ID: st.JobID, NodeID: st.NodeID, Outcome: store.JobCompleted, Now: f.clock.now()}
	if failed {
		p.Outcome, p.Code, p.Message = store.JobFailed, "word.failed", "disk full"
	}
	if _, err := f.st.JobFinish(context.Background(), p); err != nil {
		f.t.Fatal(err)
	}
}

func (f *missFixture) setState(from, to store.RolloutState, action string) {
	f.t.Helper()
	if _, err := f.st.RolloutSetState(context.Background(), store.RolloutSetStateParams{ID: f.ro.ID, From: []store.RolloutState{from},
		To: to, By: "tester", Action: action, Now: f.clock.now()}); err != nil {
		f.t.Fatal(err)
	}
}

func wantStep(t *testing.T, st store.RolloutStep, state store.StepState, reason string, finishedAt time.Time) {
	t.Helper()
	if st.State != state || !strings.Contains(st.Reason, reason) || st.StartedAt.IsZero() || !st.FinishedAt.Equal(finishedAt) {
		t.Fatalf("step %s: %s (%q) started %v finished %v; want %s (%q) finished %v", st.NodeName, st.State, st.Reason,
			st.StartedAt, st.FinishedAt, state, reason, finishedAt)
	}
}

func noJobs(t *testing.T, f *missFixture, st store.RolloutStep) {
	t.Helper()
	if res, err := f.st.JobList(context.Background(), store.JobListParams{NodeID: st.NodeID}); err != nil || len(res.Jobs) != 0 {
		t.Fatalf("%s got jobs: %+v %v", st.NodeName, res.Jobs, err)
	}
}

// TestAbortJudgesStepsUnderWay: after an abort, the steps whose node had taken its job are judged when
// the job ends (passed; failed with the job's reason and a miss event naming the node) or when their
// timeout runs out (failed, the job marked failed), with their timings; the rollout stays aborted and
// nothing new starts.
func TestAbortJudgesStepsUnderWay(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		f := newParallelFixture(t, backend, 5, 4, 0, time.Hour)
		ctx := context.Background()
		ro := f.pass()
		for _, st := range ro.Steps[:3] {
			f.claim(st)
		}
		if _, err := rollouts.Abort(ctx, f.st, f.ro.ID, "tok-operator", f.clock.now()); err != nil {
			t.Fatal(err)
		}
		f.clock.add(time.Second)
		f.finish(ro.Steps[0], false)
		f.finish(ro.Steps[1], true)
		ro = f.pass()
		if ro.State != store.RolloutAborted || ro.Misses != 1 {
			t.Fatalf("rollout %s, %d misses", ro.State, ro.Misses)
		}
		judged := f.clock.now()
		wantStep(t, ro.Steps[0], store.StepPassed, "", judged)
		wantStep(t, ro.Steps[1], store.StepFailed, "change noop failed: word.failed: disk full", judged)
		if st := ro.Steps[2]; st.State != store.StepRunning {
			t.Fatalf("a step whose job is still running: %+v", st)
		}
		wantStep(t, ro.Steps[3], store.StepSkipped, "aborted before the node took its change job", ro.Steps[3].FinishedAt)
		if st := ro.Steps[4]; st.State != store.StepSkipped {
			t.Fatalf("the pending step: %+v", st)
		}
		noJobs(t, f, ro.Steps[4])
		if got := actions(ro); got != "start,abort,miss" {
			t.Fatalf("events %s", got)
		}
		if ev := ro.Events[2]; ev.Actor != "plane" || ev.Detail != ro.Steps[1].NodeName+": "+ro.Steps[1].Reason {
			t.Fatalf("miss event %+v", ev)
		}

		// The third node never answers: its timeout, counted from when its phase began, fails it.
		f.clock.add(time.Hour)
		ro = f.pass()
		wantStep(t, ro.Steps[2], store.StepFailed, "change did not report back within 1h0m0s", f.clock.now())
		if j, err := f.st.JobGet(ctx, store.JobGetParams{ID: ro.Steps[2].JobID}); err != nil || j.State != store.JobFailed {
			t.Fatalf("the timed-out job: %+v %v", j, err)
		}
		if ro.State != store.RolloutAborted || ro.Misses != 2 || actions(ro) != "start,abort,miss,miss" {
			t.Fatalf("rollout %s, %d misses, events %s", ro.State, ro.Misses, actions(ro))
		}
		if list, err := f.st.RolloutList(ctx, store.RolloutListParams{Judging: true}); err != nil || len(list) != 0 {
			t.Fatalf("rollouts still judged: %+v %v", list, err)
		}
		if after := f.pass(); !reflect.DeepEqual(after.Steps, ro.Steps) || !reflect.DeepEqual(after.Events, ro.Events) {
			t.Fatalf("the engine touched an aborted rollout with nothing under way: %+v", after.Steps)
		}
	})
}

// TestHaltJudgesStepsUnderWay: a miss halts the rollout while another node is still running its job;
// that step is judged when its job ends (a second failure is a miss event, the halt still naming the
// first node), the halted time does not time it out, and the pending node is never started.
func TestHaltJudgesStepsUnderWay(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		f := newParallelFixture(t, backend, 4, 3, 0, time.Minute)
		ro := f.pass()
		for _, st := range ro.Steps[:3] {
			f.claim(st)
		}
		f.finish(ro.Steps[0], true)
		ro = f.pass()
		first := ro.Steps[0]
		if ro.State != store.RolloutHalted || ro.HaltNode != first.NodeName || ro.Steps[1].State != store.StepRunning || ro.Steps[2].State != store.StepRunning {
			t.Fatalf("after the first miss: %s at %q %+v", ro.State, ro.HaltNode, ro.Steps)
		}
		// Halted for longer than the step timeout: not the nodes' time.
		f.clock.add(time.Hour)
		if ro = f.pass(); ro.Steps[1].State != store.StepRunning {
			t.Fatalf("timed out while halted: %+v", ro.Steps[1])
		}
		f.finish(ro.Steps[1], false)
		f.finish(ro.Steps[2], true)
		ro = f.pass()
		wantStep(t, ro.Steps[1], store.StepPassed, "", f.clock.now())
		wantStep(t, ro.Steps[2], store.StepFailed, "change noop failed: word.failed", f.clock.now())
		if st := ro.Steps[3]; st.State != store.StepPending || !st.StartedAt.IsZero() {
			t.Fatalf("started after the halt: %+v", st)
		}
		noJobs(t, f, ro.Steps[3])
		if ro.State != store.RolloutHalted || ro.HaltNode != first.NodeName || ro.Misses != 2 || actions(ro) != "start,halt,miss" {
			t.Fatalf("rollout %s at %q, %d misses, events %s", ro.State, ro.HaltNode, ro.Misses, actions(ro))
		}
		if ev := ro.Events[2]; !strings.HasPrefix(ev.Detail, ro.Steps[2].NodeName+": ") {
			t.Fatalf("miss event %+v", ev)
		}
	})
}

// TestPauseJudgesStepsUnderWay: pausing stops new steps, not the judging of the running ones: a job
// that ends while paused passes or fails its step at once. A miss within the budget is a miss event
// and the rollout stays paused; past the budget it halts, naming the node, so a resume cannot start
// more nodes with the budget spent. Paused time does not time a step out.
func TestPauseJudgesStepsUnderWay(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		for _, tc := range []struct {
			name   string
			budget int
			state  store.RolloutState
			events string
		}{
			{"within budget", 1, store.RolloutPaused, "start,pause,miss"},
			{"past budget", 0, store.RolloutHalted, "start,pause,halt"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := newParallelFixture(t, backend, 3, 2, tc.budget, time.Minute)
				ro := f.pass()
				f.claim(ro.Steps[0])
				f.claim(ro.Steps[1])
				f.setState(store.RolloutRunning, store.RolloutPaused, "pause")
				f.clock.add(time.Hour)
				if ro = f.pass(); ro.Steps[0].State != store.StepRunning || ro.Steps[1].State != store.StepRunning {
					t.Fatalf("judged before the jobs ended: %+v", ro.Steps)
				}
				f.finish(ro.Steps[0], false)
				f.finish(ro.Steps[1], true)
				ro = f.pass()
				wantStep(t, ro.Steps[0], store.StepPassed, "", f.clock.now())
				wantStep(t, ro.Steps[1], store.StepFailed, "change noop failed: word.failed", f.clock.now())
				if st := ro.Steps[2]; st.State != store.StepPending {
					t.Fatalf("started while paused: %+v", st)
				}
				noJobs(t, f, ro.Steps[2])
				if ro.State != tc.state || ro.Misses != 1 || actions(ro) != tc.events {
					t.Fatalf("rollout %s, %d misses, events %s", ro.State, ro.Misses, actions(ro))
				}
				if tc.state == store.RolloutHalted && ro.HaltNode != ro.Steps[1].NodeName {
					t.Fatalf("halted at %q", ro.HaltNode)
				}
				if tc.state == store.RolloutPaused {
					f.setState(store.RolloutPaused, store.RolloutRunning, "resume")
					if ro = f.run(nil); ro.State != store.RolloutCompleted || ro.Steps[2].State != store.StepPassed {
						t.Fatalf("after the resume: %s %+v", ro.State, ro.Steps[2])
					}
				}
			})
		}
	})
}

// TestStoppedRolloutStartsNoNextPhase: a preflight job that passes while the rollout is paused leaves
// its step in preflight (the change job is queued only on resume, and then the step goes on); one that
// passes after an abort ends its step skipped, naming the preflight, with no change job queued.
func TestStoppedRolloutStartsNoNextPhase(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		for _, abort := range []bool{false, true} {
			f := newParallelFixture(t, backend, 1, 1, 0, time.Hour)
			ctx := context.Background()
			steps := []store.RolloutStepNew{{NodeID: f.nodes[0].ID, NodeName: f.nodes[0].Name}}
			ro, err := f.st.RolloutCreate(ctx, store.RolloutCreateParams{Kind: store.RolloutJob, Word: "noop", PreflightWord: "noop",
				Params: json.RawMessage(`{}`), PreflightParams: json.RawMessage(`{}`), // as a start stores them
				Selector: "all", Stages: []string{"100%"}, MaxParallel: 1, StepTimeout: time.Hour, Steps: steps, By: "tester", Now: f.clock.now()})
			if err != nil {
				t.Fatal(err)
			}
			// Only the new rollout: abort the fixture's own.
			if _, err := rollouts.Abort(ctx, f.st, f.ro.ID, "tester", f.clock.now()); err != nil {
				t.Fatal(err)
			}
			f.ro = ro
			ro = f.pass()
			pre := ro.Steps[0]
			if pre.Phase != store.PhasePreflight || pre.JobID == "" {
				t.Fatalf("after a pass: %+v", pre)
			}
			f.claim(pre)
			if abort {
				if _, err := rollouts.Abort(ctx, f.st, ro.ID, "tester", f.clock.now()); err != nil {
					t.Fatal(err)
				}
			} else {
				f.setState(store.RolloutRunning, store.RolloutPaused, "pause")
			}
			f.clock.add(time.Second)
			f.finish(pre, false)
			ro = f.pass()
			res, err := f.st.JobList(ctx, store.JobListParams{NodeID: pre.NodeID})
			if err != nil || len(res.Jobs) != 1 {
				t.Fatalf("jobs on the node: %+v %v", res.Jobs, err)
			}
			if abort {
				wantStep(t, ro.Steps[0], store.StepSkipped, "aborted after its preflight passed; change never ran", f.clock.now())
				if got := actions(ro); got != "start,abort" {
					t.Fatalf("events %s", got)
				}
				continue
			}
			if st := ro.Steps[0]; st.State != store.StepRunning || st.Phase != store.PhasePreflight {
				t.Fatalf("while paused: %+v", st)
			}
			f.setState(store.RolloutPaused, store.RolloutRunning, "resume")
			if ro = f.run(nil); ro.State != store.RolloutCompleted || ro.Steps[0].State != store.StepPassed {
				t.Fatalf("after the resume: %s %+v", ro.State, ro.Steps[0])
			}
		}
	})
}
