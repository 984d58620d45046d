package rollouts_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// TestTwoEnginesNeverStartANodeTwice runs two engines (two replicas) on one store, passing as fast as
// they can at once while the simulated agents answer: the rollout completes and every node ran one
// job.
func TestTwoEnginesNeverStartANodeTwice(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			url := filepath.Join(t.TempDir(), "plane.db")
			if backend == "postgres" {
				url = storetest.PostgresURL(t)
			}
			st := storetest.Open(t, url)
			peer := storetest.Open(t, url)
			nodes := enrolSimulated(t, st, 30)
			steps, stages, err := rollouts.Plan(nodes, "all", rollouts.Staging{Canary: 1, Percentages: []string{"50%", "100%"}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ro, err := st.RolloutCreate(ctx, store.RolloutCreateParams{Kind: store.RolloutJob, Word: "noop", Params: json.RawMessage(`{}`),
				Selector: "all", Stages: stages, MaxParallel: 4, Steps: steps, By: "test"})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var wg sync.WaitGroup
			for i, s := range []store.Store{st, peer} {
				e := &rollouts.Engine{Store: s, Words: benchWords{}, EngineBase: services.EngineBase{Holder: []string{"replica-a", "replica-b"}[i]}}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-done:
							return
						default:
						}
						if err := e.Pass(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			for {
				answerJobs(t, st)
				cur, err := st.RolloutGet(ctx, store.RolloutGetParams{ID: ro.ID})
				if err != nil {
					t.Fatal(err)
				}
				if cur.State != store.RolloutRunning {
					if cur.State != store.RolloutCompleted {
						t.Fatalf("rollout %s: %s", cur.State, cur.HaltReason)
					}
					break
				}
			}
			close(done)
			wg.Wait()
			for _, n := range nodes {
				res, err := st.JobList(ctx, store.JobListParams{NodeID: n.ID})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Jobs) != 1 {
					t.Fatalf("node %s ran %d jobs", n.Name, len(res.Jobs))
				}
			}
		})
	}
}

// TestStartedRolloutIsAdvancedByItsReplica: a rollout started through a replica's room is that
// replica's engine's from the start; another replica's pass, however soon, leaves it alone until the
// lease runs out, and then takes it over.
func TestStartedRolloutIsAdvancedByItsReplica(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		f := newPatchFixture(t, backend, patchNode{"a", "192.0.2.1", false, false}, patchNode{"b", "192.0.2.2", false, false})
		ctx := context.Background()
		room := rollouts.NewRoom(rollouts.RoomConfig{Store: f.st, Words: patchWords{}, Now: f.clock.now, Log: slog.New(slog.DiscardHandler), Engine: f.e})
		ro, err := room.Start(ctx, operator, api.RolloutRequest{Word: rollouts.ReportWord, Params: json.RawMessage(`{}`), Selector: "all"})
		if err != nil {
			t.Fatal(err)
		}
		other := f.engine(f.st, "replica-b")
		if err := other.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if jobs, err := f.st.JobList(ctx, store.JobListParams{}); err != nil || len(jobs.Jobs) != 0 {
			t.Fatalf("another replica advanced the rollout: %v, %v", jobs.Jobs, err)
		}
		holder := func() string {
			l, err := f.st.LeaseList(ctx, store.LeaseListParams{Subject: ro.ID})
			if err != nil || len(l) != 1 {
				t.Fatalf("leases %v, %v", l, err)
			}
			return l[0].Holder
		}
		if h := holder(); h != "replica-a" {
			t.Fatalf("the rollout is held by %s", h)
		}
		f.clock.add(time.Minute + time.Second) // replica-a died: its lease runs out
		if err := other.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if h := holder(); h != "replica-b" {
			t.Fatalf("after expiry the rollout is held by %s", h)
		}
	})
}
