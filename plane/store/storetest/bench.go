package storetest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
)

// Bench runs the store benchmarks the plane's hot paths depend on.
func Bench(b *testing.B, open Opener) {
	b.Run("JobClaimFinish", func(b *testing.B) { benchClaimFinish(b, open(b)) })
	b.Run("JobRoundTripParallel", func(b *testing.B) { benchRoundTripParallel(b, open(b)) })
	b.Run("NodeGetByKey", func(b *testing.B) { benchNodeGetByKey(b, open(b)) })
	b.Run("NonceUse", func(b *testing.B) { benchNonceUse(b, open(b)) })
	b.Run("CaseIntakeUnchanged", func(b *testing.B) { benchCaseIntakeUnchanged(b, open(b)) })
	b.Run("IncidentReconcileQuiet", func(b *testing.B) { benchReconcileQuiet(b, open(b)) })
}

// benchCaseIntakeUnchanged measures what a claim carrying a case the plane already holds costs: every
// claim of a node carries its latest case of each recipe, so this is the common case.
func benchCaseIntakeUnchanged(b *testing.B, env Env) {
	f := benchFx{b, env.Store}
	ctx := b.Context()
	n := f.node("bench")
	t0 := time.Now()
	c := store.CaseReport{ID: 1, Recipe: "unit_health", State: store.CaseClosed, OpenedAt: t0, ClosedAt: t0, Summary: "nginx failed"}
	p := store.CaseIntakeParams{NodeID: n.ID, Cases: []store.CaseReport{c}}
	if _, err := f.s.CaseIntake(ctx, p); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := f.s.CaseIntake(ctx, p)
		if err != nil || res.Outcomes[0].Result != store.CaseUnchanged {
			b.Fatalf("CaseIntake: %v %+v", err, res)
		}
	}
}

// benchReconcileQuiet measures one reconciler run over 1,000 healthy nodes, which writes nothing.
func benchReconcileQuiet(b *testing.B, env Env) {
	f := benchFx{b, env.Store}
	ctx := b.Context()
	for i := range 1000 {
		f.node(fmt.Sprintf("n%d", i))
	}
	for b.Loop() {
		res, err := f.s.IncidentReconcile(ctx, store.IncidentReconcileParams{})
		if err != nil || len(res.Changes) != 0 {
			b.Fatalf("IncidentReconcile: %v %d changes", err, len(res.Changes))
		}
	}
}

// benchFx is a fixture for benchmarks, which have no *testing.T.
type benchFx struct {
	b *testing.B
	s store.Store
}

func (f benchFx) node(name string) store.Node {
	f.b.Helper()
	ctx := f.b.Context()
	k, fp := nodeKey()
	j, err := f.s.JoinCreate(ctx, store.JoinCreateParams{Name: name, Key: k, Fingerprint: fp, SourceAddress: name,
		MaxPending: 100000, MaxPendingPerSource: 100000})
	if err != nil {
		f.b.Fatal(err)
	}
	res, err := f.s.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: fp})
	if err != nil {
		f.b.Fatal(err)
	}
	n, err := f.s.NodeReport(ctx, store.NodeReportParams{ID: res.Node.ID, Vocabulary: words("w"), Idle: true})
	if err != nil {
		f.b.Fatal(err)
	}
	return n
}

func (f benchFx) jobParams(n store.Node) store.JobCreateParams {
	return store.JobCreateParams{NodeID: n.ID, Word: "w", Class: string(manifest.ClassLook), Params: []byte(`{"path":"/"}`), CreatedBy: "bench"}
}

// benchClaimFinish measures one claim and one result, the round trip an agent makes per job. Jobs are
// queued beforehand, outside the timer.
func benchClaimFinish(b *testing.B, env Env) {
	f := benchFx{b, env.Store}
	ctx := b.Context()
	n := f.node("bench")
	const batch = 256
	queued := 0
	for b.Loop() {
		if queued == 0 {
			b.StopTimer()
			for range batch {
				if _, err := f.s.JobCreate(ctx, f.jobParams(n)); err != nil {
					b.Fatal(err)
				}
			}
			queued = batch
			b.StartTimer()
		}
		j, err := f.s.JobClaim(ctx, store.JobClaimParams{NodeID: n.ID})
		if err != nil || j == nil {
			b.Fatalf("JobClaim: %v, %v", j, err)
		}
		if _, err := f.s.JobFinish(ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted,
			Output: []byte(`{"ok":true}`), Duration: time.Millisecond}); err != nil {
			b.Fatal(err)
		}
		queued--
	}
}

// benchRoundTripParallel queues, claims and finishes jobs for 20 nodes at once, one goroutine per node,
// as a plane serving busy agents would.
func benchRoundTripParallel(b *testing.B, env Env) {
	f := benchFx{b, env.Store}
	ctx := b.Context()
	nodes := make([]store.Node, 20)
	for i := range nodes {
		nodes[i] = f.node(fmt.Sprintf("bench-%02d", i))
	}
	var next atomic.Int32
	b.SetParallelism(10) // 10 x GOMAXPROCS goroutines; each takes its own node
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		n := nodes[int(next.Add(1)-1)%len(nodes)]
		for pb.Next() {
			if _, err := f.s.JobCreate(ctx, f.jobParams(n)); err != nil {
				b.Error(err)
				return
			}
			j, err := f.s.JobClaim(ctx, store.JobClaimParams{NodeID: n.ID})
			if err != nil {
				b.Error(err)
				return
			}
			if j == nil {
				continue // another goroutine on this node holds the running job
			}
			if _, err := f.s.JobFinish(ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchNodeGetByKey measures the lookup behind every signed request, among 200 nodes.
func benchNodeGetByKey(b *testing.B, env Env) {
	f := benchFx{b, env.Store}
	ctx := b.Context()
	fps := make([]string, 200)
	for i := range fps {
		fps[i] = f.node(fmt.Sprintf("bench-%03d", i)).Fingerprint
	}
	var i atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			fp := fps[int(i.Add(1))%len(fps)]
			if _, err := f.s.NodeGetByKey(ctx, store.NodeGetByKeyParams{Fingerprint: fp}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchNonceUse measures the replay check every signed request makes.
func benchNonceUse(b *testing.B, env Env) {
	s := env.Store
	ctx := b.Context()
	var i atomic.Int64
	exp := time.Now().Add(10 * time.Minute)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := fmt.Sprintf("nonce-%d", i.Add(1))
			fresh, err := s.NonceUse(ctx, store.NonceUseParams{KeyID: "bench", Nonce: n, ExpiresAt: exp})
			if err != nil || !fresh {
				b.Errorf("NonceUse: %v, %v", fresh, err)
				return
			}
		}
	})
}
