package retention_test

import (
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
