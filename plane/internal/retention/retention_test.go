package retention_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/retention"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestOneReplicaPrunes: of two replicas, the one holding the lease prunes what is past its age and
// keeps the rest; the other does nothing; an audit age under the floor is refused.
func TestOneReplicaPrunes(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, age := range []time.Duration{500 * 24 * time.Hour, 10 * 24 * time.Hour} {
		if _, err := st.AuditEventStart(t.Context(), store.AuditEventStartParams{Via: store.AuditViaAPI, Operation: "JobsCreate", Now: now.Add(-age)}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DriverCallAdd(t.Context(), store.DriverCallAddParams{Actor: "a", Driver: "dns-memory", Operation: store.OpDNSListZones,
			Code: store.CodeOK, Now: now.Add(-age)}); err != nil {
			t.Fatal(err)
		}
	}
	clock := func() time.Time { return now }
	a, err := retention.New(retention.Config{Store: st, Holder: "a", Now: clock, DriverCallAge: 5 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := retention.New(retention.Config{Store: st, Holder: "b", Now: clock})
	if held, err := a.Prune(t.Context()); !held || err != nil {
		t.Fatalf("a: held %v, %v", held, err)
	}
	if held, err := b.Prune(t.Context()); held || err != nil {
		t.Fatalf("b pruned beside a: held %v, %v", held, err)
	}
	events, _ := st.AuditEventList(t.Context(), store.AuditEventListParams{})
	calls, _ := st.DriverCallList(t.Context(), store.DriverCallListParams{})
	if len(events.Events) != 1 || len(calls.Calls) != 0 {
		t.Fatalf("left %d events (want the recent one) and %d driver calls (want none)", len(events.Events), len(calls.Calls))
	}
	if _, err := retention.New(retention.Config{Store: st, AuditAge: 24 * time.Hour}); !errcode.Has(err, errcode.UsageInvalid) {
		t.Fatalf("an audit age under the floor: %v", err)
	}
}

// TestPrunesJobsAndIncidents: with the default ages, a job finished 100 days ago and an incident
// settled 200 days ago go; a job finished yesterday and a still open incident stay; a zero or
// negative job age is refused.
func TestPrunesJobsAndIncidents(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	long := now.Add(-200 * 24 * time.Hour)
	settled := storetest.Node(t, st, "web-1", "1.0.0", long)
	open := storetest.Node(t, st, "web-2", "1.0.0", long)
	if _, err := st.IncidentReconcile(t.Context(), store.IncidentReconcileParams{Now: long.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.NodeReport(t.Context(), store.NodeReportParams{ID: settled.ID, Now: long.Add(2 * time.Hour), Vocabulary: settled.Vocabulary, Idle: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.IncidentReconcile(t.Context(), store.IncidentReconcileParams{Now: long.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if before, err := st.IncidentList(t.Context(), store.IncidentListParams{Now: now}); err != nil || len(before.Incidents) != 2 {
		t.Fatalf("incidents before pruning: %+v, %v", before, err)
	}
	old := storetest.Completed(t, st, settled.ID, "w", json.RawMessage(`{}`), now.Add(-100*24*time.Hour))
	recent := storetest.Completed(t, st, settled.ID, "w", json.RawMessage(`{}`), now.Add(-24*time.Hour))
	p, err := retention.New(retention.Config{Store: st, Holder: "a", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := p.Prune(t.Context()); !held || err != nil {
		t.Fatalf("held %v, %v", held, err)
	}
	if _, err := st.JobGet(t.Context(), store.JobGetParams{ID: old.ID}); !errcode.Has(err, errcode.JobNotFound) {
		t.Fatalf("a job finished 100 days ago: %v", err)
	}
	if _, err := st.JobGet(t.Context(), store.JobGetParams{ID: recent.ID}); err != nil {
		t.Fatalf("a job finished yesterday: %v", err)
	}
	left, err := st.IncidentList(t.Context(), store.IncidentListParams{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Incidents) != 1 || left.Incidents[0].NodeID != open.ID || left.Incidents[0].Condition != store.ConditionOpen {
		t.Fatalf("incidents left: %+v", left.Incidents)
	}
	if _, err := retention.New(retention.Config{Store: st, JobAge: -time.Hour}); !errcode.Has(err, errcode.UsageInvalid) {
		t.Fatalf("a negative job age: %v", err)
	}
}
