package rollouts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
)

// counting counts the store calls the engine makes: each is one statement or one short transaction
// (RolloutGet and RolloutSetState read the rollout back, JobCreate is a transaction of three).
type counting struct {
	store.Store
	calls atomic.Int64
}

func (c *counting) RolloutList(ctx context.Context, p store.RolloutListParams) ([]store.Rollout, error) {
	c.calls.Add(1)
	return c.Store.RolloutList(ctx, p)
}
func (c *counting) RolloutGet(ctx context.Context, p store.RolloutGetParams) (store.Rollout, error) {
	c.calls.Add(1)
	return c.Store.RolloutGet(ctx, p)
}
func (c *counting) RolloutStepUpdate(ctx context.Context, p store.RolloutStepUpdateParams) (store.RolloutStepUpdateResult, error) {
	c.calls.Add(1)
	return c.Store.RolloutStepUpdate(ctx, p)
}
func (c *counting) RolloutSetState(ctx context.Context, p store.RolloutSetStateParams) (store.Rollout, error) {
	c.calls.Add(1)
	return c.Store.RolloutSetState(ctx, p)
}
func (c *counting) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, error) {
	c.calls.Add(1)
	return c.Store.LeaseAcquire(ctx, p)
}
func (c *counting) LeaseRelease(ctx context.Context, p store.LeaseReleaseParams) error {
	c.calls.Add(1)
	return c.Store.LeaseRelease(ctx, p)
}
func (c *counting) NodeGet(ctx context.Context, p store.NodeGetParams) (store.Node, error) {
	c.calls.Add(1)
	return c.Store.NodeGet(ctx, p)
}
func (c *counting) JobCreate(ctx context.Context, p store.JobCreateParams) (store.Job, error) {
	c.calls.Add(1)
	return c.Store.JobCreate(ctx, p)
}
func (c *counting) JobGet(ctx context.Context, p store.JobGetParams) (store.Job, error) {
	c.calls.Add(1)
	return c.Store.JobGet(ctx, p)
}
func (c *counting) JobList(ctx context.Context, p store.JobListParams) (store.JobListResult, error) {
	c.calls.Add(1)
	return c.Store.JobList(ctx, p)
}

// BenchmarkJobRollout1000 runs a job rollout over 1,000 simulated agents in stages of 1, 10% and
// 100% (max-parallel 100), on each store: the engine passes run back to back while the agents (store
// clients in this process, claiming and finishing as the channel does) answer every job at once.
// Reported: the whole rollout's wall time, the process's CPU time (engine and simulated agents
// together), and the engine's store calls per node step.
func BenchmarkJobRollout1000(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				url := filepath.Join(b.TempDir(), "plane.db")
				if backend == "postgres" {
					url = storetest.PostgresURL(b)
				}
				st := storetest.Open(b, url)
				nodes := enrolSimulated(b, st, 1000)
				b.StartTimer()
				runRollout(b, st, nodes)
			}
		})
	}
}

func enrolSimulated(b testing.TB, st store.Store, n int) []store.Node {
	ctx := context.Background()
	var nodes []store.Node
	for i := range n {
		pub := keys.NewNode().Public()
		j, err := st.JoinCreate(ctx, store.JoinCreateParams{Name: fmt.Sprintf("sim-%04d", i), Key: pub.String(),
			Fingerprint: pub.Fingerprint(), Addresses: []string{"192.0.2.1"}, SourceAddress: "192.0.2.1", MaxPending: 10000, MaxPendingPerSource: 10000})
		if err != nil {
			b.Fatal(err)
		}
		res, err := st.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: j.Join.Fingerprint, By: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		n, err := st.NodeReport(ctx, store.NodeReportParams{ID: res.Node.ID, Vocabulary: []store.WordRef{{Name: "noop", Version: "1.0.0", Digest: noopDigest, Class: "look"}}, Idle: true})
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	return nodes
}

func runRollout(b *testing.B, raw store.Store, nodes []store.Node) {
	ctx := context.Background()
	st := &counting{Store: raw}
	steps, stages, err := rollouts.Plan(nodes, "all", rollouts.Staging{Canary: 1, Percentages: []string{"10%", "100%"}})
	if err != nil {
		b.Fatal(err)
	}
	ro, err := raw.RolloutCreate(ctx, store.RolloutCreateParams{Kind: store.RolloutJob, Word: "noop", Params: json.RawMessage(`{}`),
		Selector: "all", Stages: stages, MaxParallel: 100, Steps: steps, By: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	e := &rollouts.Engine{Store: st, Words: benchWords{}, EngineBase: services.EngineBase{Holder: "bench", Log: slog.New(slog.DiscardHandler)}}
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	for {
		if err := e.Pass(ctx); err != nil {
			b.Fatal(err)
		}
		answerJobs(b, raw)
		cur, err := raw.RolloutGet(ctx, store.RolloutGetParams{ID: ro.ID})
		if err != nil {
			b.Fatal(err)
		}
		if cur.State != store.RolloutRunning {
			if cur.State != store.RolloutCompleted {
				b.Fatalf("rollout %s: %s at %s", cur.State, cur.HaltReason, cur.HaltNode)
			}
			break
		}
	}
	wall := time.Since(start)
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(wall.Seconds(), "rollout-s")
	b.ReportMetric(cpu.Seconds(), "cpu-s")
	b.ReportMetric(float64(st.calls.Load())/float64(len(nodes)), "store-calls/node-step")
}

// answerJobs is the simulated agents: every queued job is claimed and completed.
func answerJobs(b testing.TB, st store.Store) {
	ctx := context.Background()
	res, err := st.JobList(ctx, store.JobListParams{State: store.JobQueued, Limit: store.MaxListLimit})
	if err != nil {
		b.Fatal(err)
	}
	for _, j := range res.Jobs {
		got, err := st.JobClaim(ctx, store.JobClaimParams{NodeID: j.NodeID})
		if err != nil || got == nil {
			b.Fatalf("claim: %v %v", got, err)
		}
		if _, err := st.JobFinish(ctx, store.JobFinishParams{ID: got.ID, NodeID: j.NodeID, Outcome: store.JobCompleted}); err != nil {
			b.Fatal(err)
		}
	}
}

var noopDigest = strings.Repeat("a", 64)

// benchWords stands for the release catalog: every node's target pins noop.
type benchWords struct{}

func (benchWords) Words(context.Context, int64) (map[string]releases.Word, string, error) {
	return map[string]releases.Word{"noop": {Manifest: &manifest.Manifest{Name: "noop", Class: manifest.ClassLook}, Module: noopDigest}}, "", nil
}

func (benchWords) Agent(context.Context, int64) (string, error) { return "", nil }
