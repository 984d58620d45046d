package jobs_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// activeNode enrols a node named name reporting the word "w" at t0 and answers its id.
func activeNode(t *testing.T, s store.Store, name string, t0 time.Time) string {
	t.Helper()
	return storetest.NodeWords(t, s, name, "1.0.0", t0, []store.WordRef{{Name: "w", Version: "1.0.0", Digest: "d", Class: "look"}}).ID
}

// runningJob enrols a node reporting the word "w" and hands it a job with a one-minute budget, claimed
// at t0.
func runningJob(t *testing.T, s store.Store, t0 time.Time) store.Job {
	t.Helper()
	ctx := t.Context()
	node := activeNode(t, s, "web-1", t0)
	if _, err := s.JobCreate(ctx, store.JobCreateParams{NodeID: node, Word: "w", Class: "look", Params: []byte(`{}`),
		Budget: time.Minute, CreatedBy: "test", Now: t0}); err != nil {
		t.Fatal(err)
	}
	job, err := s.JobClaim(ctx, store.JobClaimParams{NodeID: node, Now: t0})
	if err != nil || job == nil {
		t.Fatalf("claim: %v %v", job, err)
	}
	return *job
}

func state(t *testing.T, s store.Store, id string) store.JobState {
	t.Helper()
	j, err := s.JobGet(t.Context(), store.JobGetParams{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return j.State
}

func TestExpireLosesJobsPastTheirBudget(t *testing.T) {
	s := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	t0 := time.Now().UTC().Truncate(time.Second)
	job := runningJob(t, s, t0)
	now := t0.Add(30 * time.Second)
	e := jobs.NewExpirer(jobs.Config{Store: s, Now: func() time.Time { return now }})
	e.Expire(t.Context())
	if st := state(t, s, job.ID); st != store.JobRunning {
		t.Fatalf("within its budget the job is %s", st)
	}
	now = t0.Add(2 * time.Minute)
	e.Expire(t.Context())
	if st := state(t, s, job.ID); st != store.JobLost {
		t.Fatalf("past its budget the job is %s, want lost", st)
	}
	e.Expire(t.Context()) // again: nothing to do, nothing fails
	if st := state(t, s, job.ID); st != store.JobLost {
		t.Fatalf("a second pass moved the job to %s", st)
	}
}

// The service runs Expire on its tick.
func TestExpirerRunsOnItsTick(t *testing.T) {
	s := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	t0 := time.Now().UTC().Truncate(time.Second)
	job := runningJob(t, s, t0)
	e := jobs.NewExpirer(jobs.Config{Store: s, Now: func() time.Time { return t0.Add(time.Hour) }})
	ticks, stopped := make(chan time.Time), make(chan struct{})
	e.NewTicker = func(d time.Duration) (<-chan time.Time, func()) {
		if d != jobs.DefaultExpireEvery {
			t.Errorf("ticker of %s, want %s", d, jobs.DefaultExpireEvery)
		}
		return ticks, func() { close(stopped) }
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := state(t, s, job.ID); st != store.JobRunning {
		t.Fatalf("before any tick the job is %s", st)
	}
	// The loop takes the second tick only after the first tick's pass returned.
	ticks <- t0
	ticks <- t0
	if st := state(t, s, job.ID); st != store.JobLost {
		t.Fatalf("after a tick the job is %s, want lost", st)
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-stopped
}

// A plane stopped between a batch job's end and the batch's advance leaves its held jobs waiting with
// room to run: the expirer's next pass releases them, on both stores.
func TestExpireAdvancesStalledBatches(t *testing.T) {
	for backend, open := range map[string]func(testing.TB) storetest.Env{"sqlite": storetest.SQLiteOpener, "postgres": storetest.PostgresOpener} {
		t.Run(backend, func(t *testing.T) {
			s := open(t).Store
			ctx := t.Context()
			t0 := time.Now().UTC().Truncate(time.Second)
			var targets []store.BatchTarget
			var nodes []string
			for _, name := range []string{"web-1", "web-2"} {
				id := activeNode(t, s, name, t0)
				targets = append(targets, store.BatchTarget{NodeID: id})
				nodes = append(nodes, id)
			}
			b, err := s.BatchCreate(ctx, store.BatchCreateParams{Word: "w", Selector: "all", Class: "look", Params: []byte(`{}`),
				MaxParallel: 1, ErrorBudget: store.NoErrorBudget, Targets: targets, CreatedBy: "operator", Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			claim := func(node string) *store.Job {
				j, err := s.JobClaim(ctx, store.JobClaimParams{NodeID: node, Now: t0})
				if err != nil {
					t.Fatal(err)
				}
				return j
			}
			first := claim(nodes[0])
			if first == nil || claim(nodes[1]) != nil {
				t.Fatal("the bound of one did not hold the second job")
			}
			// The job ends through the store alone: the room's advance never runs.
			if _, err := s.JobFinish(ctx, store.JobFinishParams{ID: first.ID, NodeID: nodes[0], Outcome: store.JobCompleted, Output: []byte(`{}`), Now: t0}); err != nil {
				t.Fatal(err)
			}
			if claim(nodes[1]) != nil {
				t.Fatal("the held job was handed out without an advance")
			}
			e := jobs.NewExpirer(jobs.Config{Store: s, Now: func() time.Time { return t0 }})
			e.Expire(ctx)
			if j := claim(nodes[1]); j == nil || j.BatchID != b.ID {
				t.Fatalf("after the expirer's pass the held job is not handed out: %+v", j)
			}
		})
	}
}
