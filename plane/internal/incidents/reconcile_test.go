package incidents_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/incidents"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
)

// untrustedNode enrols a node whose claim at t0 said it cannot verify the plane's statement.
func untrustedNode(t *testing.T, s store.Store, t0 time.Time) store.Node {
	t.Helper()
	ctx := t.Context()
	pub := keys.NewNode().Public()
	j, err := s.JoinCreate(ctx, store.JoinCreateParams{Name: "web-1", Key: pub.String(), Fingerprint: pub.Fingerprint(), SourceAddress: "192.0.2.1", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint(), Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.NodeReport(ctx, store.NodeReportParams{ID: res.Node.ID, Now: t0, Idle: true, Untrusted: "statement.signature_invalid: no held key signed it"})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func open(t *testing.T, s store.Store, now time.Time) []store.Incident {
	t.Helper()
	res, err := s.IncidentList(t.Context(), store.IncidentListParams{Condition: store.ConditionOpen, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return res.Incidents
}

func TestReconcileOpensOnceAndWakesTheDeliverer(t *testing.T) {
	s := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	t0 := time.Now().UTC().Truncate(time.Second)
	n := untrustedNode(t, s, t0)
	queued := 0
	r := incidents.NewReconciler(incidents.Config{Store: s, Now: func() time.Time { return t0.Add(time.Minute) }, Up: t0,
		Webhooks: []string{"ops"}, Queued: func() { queued++ }})
	r.Reconcile(t.Context())
	got := open(t, s, t0.Add(time.Minute))
	if len(got) != 1 || got[0].NodeID != n.ID || got[0].Source != store.DetectorUntrustedRelease {
		t.Fatalf("open incidents %+v", got)
	}
	if queued != 1 {
		t.Fatalf("Queued called %d times after an incident opened with a webhook, want 1", queued)
	}
	// Nothing changed: a second run writes nothing and queues nothing.
	r.Reconcile(t.Context())
	if queued != 1 || len(open(t, s, t0.Add(time.Minute))) != 1 {
		t.Fatalf("a second run queued again (%d) or changed the incidents", queued)
	}
}

func TestReconcilerRunsOnItsTick(t *testing.T) {
	s := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	t0 := time.Now().UTC().Truncate(time.Second)
	untrustedNode(t, s, t0)
	r := incidents.NewReconciler(incidents.Config{Store: s, Now: func() time.Time { return t0.Add(time.Minute) }, Up: t0, Every: time.Hour})
	ticks, stopped := make(chan time.Time), make(chan struct{})
	r.NewTicker = func(d time.Duration) (<-chan time.Time, func()) {
		if d != time.Hour {
			t.Errorf("ticker of %s, want the configured 1h", d)
		}
		return ticks, func() { close(stopped) }
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := open(t, s, t0); len(got) != 0 {
		t.Fatalf("before any tick: %+v", got)
	}
	// The loop takes the second tick only after the first tick's pass returned.
	ticks <- t0
	ticks <- t0
	if got := open(t, s, t0.Add(time.Minute)); len(got) != 1 {
		t.Fatalf("after a tick: %+v", got)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-stopped
}
