package logviews_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/logviews"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const origin = "log.lexicon.test"

type env struct {
	t     *testing.T
	s     store.Store
	t0    time.Time
	log   *tlogtest.Log
	url   string
	views *logviews.Views
	n     int
}

func newEnv(t *testing.T) *env {
	e := &env{t: t, s: storetest.Open(t, filepath.Join(t.TempDir(), "plane.db")), t0: time.Now().UTC().Truncate(time.Second),
		log: tlogtest.New(origin)}
	e.url = e.serve(e.log)
	e.views = logviews.New(logviews.Config{Store: e.s, URLs: []string{"http://127.0.0.1:1/nothing-here", e.url},
		LogKeys: func() ([]keys.LogPublic, error) { return []keys.LogPublic{e.log.PublicKey()}, nil },
		Now:     func() time.Time { return e.t0.Add(time.Minute) }})
	return e
}

func (e *env) serve(l *tlogtest.Log) string {
	srv := l.Server()
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// grow appends n leaves to l and returns its checkpoint then.
func (e *env) grow(l *tlogtest.Log, n int, tag string) checkpoint.Checkpoint {
	e.t.Helper()
	for range n {
		e.n++
		if err := l.AppendLeaf(fmt.Appendf(nil, "%s-%d", tag, e.n)); err != nil {
			e.t.Fatal(err)
		}
	}
	signed, err := l.Checkpoint(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	cp, err := checkpoint.Open(signed, e.log.PublicKey())
	if err != nil {
		e.t.Fatal(err)
	}
	return cp
}

// node enrols a node holding cp.
func (e *env) node(name string, cp checkpoint.Checkpoint) store.Node {
	e.t.Helper()
	ctx := e.t.Context()
	pub := keys.NewNode().Public()
	j, err := e.s.JoinCreate(ctx, store.JoinCreateParams{Name: name, Key: pub.String(), Fingerprint: pub.Fingerprint(), SourceAddress: "192.0.2.1", Now: e.t0})
	must(e.t, err)
	res, err := e.s.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint(), Now: e.t0})
	must(e.t, err)
	n, err := e.s.NodeReport(ctx, store.NodeReportParams{ID: res.Node.ID, Now: e.t0, Idle: true,
		Checkpoints: []store.NodeCheckpoint{{Origin: cp.Origin, Size: int64(cp.Size), RootHash: cp.Summary().RootHash()}}})
	must(e.t, err)
	return n
}

func (e *env) splits() []string {
	e.t.Helper()
	_, err := e.s.IncidentReconcile(e.t.Context(), store.IncidentReconcileParams{Now: e.t0.Add(2 * time.Minute)})
	must(e.t, err)
	res, err := e.s.IncidentList(e.t.Context(), store.IncidentListParams{Condition: store.ConditionOpen, Now: e.t0.Add(2 * time.Minute)})
	must(e.t, err)
	var out []string
	for _, i := range res.Incidents {
		if i.Source == store.DetectorLogSplitView {
			out = append(out, i.NodeName)
		}
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSplitViewBetweenSizes: two nodes hold checkpoints of different sizes from two histories of one
// log. No root repeats a size, so only a proof can tell; the plane fetches it from the log it reads,
// finds it does not join the two, and raises plane:log_split_view on both. A node that holds a
// smaller tree of the same history is proven consistent and raises nothing.
func TestSplitViewBetweenSizes(t *testing.T) {
	e := newEnv(t)
	e.grow(e.log, 40, "common")
	fork := e.log.Fork()
	e.serve(fork)
	early := e.grow(e.log, 10, "honest")
	honest := e.grow(e.log, 300, "honest") // past a tile boundary
	forked := e.grow(fork, 20, "fork")

	e.node("web-1", honest)
	e.node("web-2", early)
	if got := e.splits(); len(got) != 0 {
		t.Fatalf("one history: %v", got)
	}
	e.views.Compare(t.Context())
	verdicts, err := e.s.LogConsistencyList(t.Context(), store.LogConsistencyListParams{})
	must(t, err)
	if len(verdicts) != 1 || !verdicts[0].Consistent || verdicts[0].Old.Size != int64(early.Size) || verdicts[0].New.Size != int64(honest.Size) {
		t.Fatalf("verdicts %+v", verdicts)
	}
	if got := e.splits(); len(got) != 0 {
		t.Fatalf("a proven prefix raised %v", got)
	}

	e.node("web-3", forked)
	if got := e.splits(); len(got) != 0 {
		t.Fatalf("raised before any proof: %v", got)
	}
	e.views.Compare(t.Context())
	if got := e.splits(); len(got) != 2 || got[0] == got[1] || (got[0] != "web-3" && got[1] != "web-3") {
		t.Fatalf("split view: %v", got)
	}
	verdicts, err = e.s.LogConsistencyList(t.Context(), store.LogConsistencyListParams{})
	must(t, err)
	if len(verdicts) != 2 {
		t.Fatalf("verdicts %+v", verdicts)
	}
	// Judged pairs are not asked again: a log gone away changes nothing.
	e.views = logviews.New(logviews.Config{Store: e.s, URLs: []string{"http://127.0.0.1:1/gone"},
		LogKeys: func() ([]keys.LogPublic, error) { return []keys.LogPublic{e.log.PublicKey()}, nil }})
	e.views.Compare(t.Context())
	if got := e.splits(); len(got) != 2 {
		t.Fatalf("after the log went away: %v", got)
	}
}

// TestProofForNodes: the proof a node asks for comes from the log and verifies; sizes that are no
// tree, a log the plane holds no key of, and a log it cannot reach are refused with their codes.
func TestProofForNodes(t *testing.T) {
	e := newEnv(t)
	a := e.grow(e.log, 3, "a")
	b := e.grow(e.log, 7, "b")
	p, err := e.views.Proof(t.Context(), origin, a.Size, b.Size)
	must(t, err)
	must(t, p.Verify(a, b))
	_, err = e.views.Proof(t.Context(), origin, b.Size, a.Size)
	testkit.WantCode(t, err, errcode.UsageInvalid)
	_, err = e.views.Proof(t.Context(), "other.log", 1, 2)
	testkit.WantCode(t, err, errcode.LogUnavailable)
	_, err = e.views.Proof(t.Context(), origin, a.Size, b.Size+100)
	testkit.WantCode(t, err, errcode.LogUnavailable)
	none := logviews.New(logviews.Config{Store: e.s, URLs: []string{"http://127.0.0.1:1/gone"},
		LogKeys: func() ([]keys.LogPublic, error) { return []keys.LogPublic{e.log.PublicKey()}, nil }})
	_, err = none.Proof(t.Context(), origin, a.Size, b.Size)
	testkit.WantCode(t, err, errcode.LogUnavailable)
}
