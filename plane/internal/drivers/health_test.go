package drivers_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestDriverThatKeepsTimingOutRaisesAnIncident: a driver whose every call hangs is restarted after each
// timeout (--driver-max-timeouts 1), each restart is recorded in the audit log, and the reconciler raises
// plane:driver_failing naming it; one call answered clears it.
func TestDriverThatKeepsTimingOutRaisesAnIncident(t *testing.T) {
	f := newFixture(t, "")
	f.m, f.log = f.managerWith(f.st, f.key, "", func(c *drivers.Config) {
		c.Plugin.CallTimeout = 2 * time.Second // a mechanism here, not a measurement
		c.Plugin.MaxTimeouts = 1
	})
	f.publish("dns-crashy")
	_, err := f.m.Enable(f.ctx, "alice", "dns-crashy", false)
	must(t, err)
	_, err = f.m.AccountAdd(f.ctx, "alice", drivers.AccountAddRequest{Driver: "dns-crashy", Name: "stuck",
		Settings: json.RawMessage(`{"zones": ["example.com", "hang.test"]}`), Credential: driver.NewSecret(credential)})
	must(t, err)

	reconcile := func() []store.IncidentChange {
		t.Helper()
		res, err := f.st.IncidentReconcile(f.ctx, store.IncidentReconcileParams{})
		must(t, err)
		return res.Changes
	}
	// Every call hangs and times out (or, while the process restarts, finds it unavailable); each
	// restart is recorded before the restarted process can take a call. Call until three are.
	restarts := func() int {
		n := 0
		for _, c := range audit(t, f.m, store.DriverCallListParams{Driver: "dns-crashy"}) {
			if c.Operation == store.OpDriverRestart {
				n++
				if c.Code != errcode.DriverTimeout || c.Actor != store.AuthorPlane {
					t.Fatalf("restart record %+v", c)
				}
			}
		}
		return n
	}
	for i := 0; restarts() < 3; i++ {
		if i == 20 {
			t.Fatalf("%d restarts recorded after %d calls", restarts(), i)
		}
		_, err := f.m.DNSRecords(f.ctx, "bob", "stuck", "hang.test")
		if !errcode.Has(err, errcode.DriverTimeout) && !errcode.Has(err, errcode.DriverUnavailable) {
			t.Fatalf("call %d: %v, want driver.timeout or driver.unavailable", i, err)
		}
	}
	ch := reconcile()
	if len(ch) != 1 || ch[0].Incident.Source != store.DetectorDriverFailing || ch[0].Incident.Subject != "dns-crashy" ||
		ch[0].Incident.NodeID != "" || ch[0].Event.Kind != store.EventOpened {
		t.Fatalf("changes %+v", ch)
	}
	if got := reconcile(); len(got) != 0 {
		t.Fatalf("looking again changed %+v", got)
	}

	// The driver answers again: the incident clears. A call may find it still restarting, or answer
	// from the process being replaced just before its restart is recorded; only a success after the
	// last restart clears, so the calls go on until one does.
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatalf("still open after %d calls answered", i)
		}
		_, err = f.m.DNSZones(f.ctx, "bob", "stuck")
		if err != nil {
			if !errcode.Has(err, errcode.DriverUnavailable) {
				t.Fatalf("call after the hangs: %v", err)
			}
			continue
		}
		if ch = reconcile(); len(ch) > 0 {
			break
		}
	}
	if ch[0].Incident.Subject != "dns-crashy" || ch[0].Event.Kind != store.EventCleared {
		t.Fatalf("changes after recovery %+v", ch)
	}
}
