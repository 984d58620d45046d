package storetest

import (
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// beat heartbeats replica id at d, started at 0, with a one-minute lease.
func (f *fx) beat(id string, d time.Duration, mod func(*store.ReplicaHeartbeatParams)) store.Replica {
	f.Helper()
	p := store.ReplicaHeartbeatParams{ID: id, Version: "1.2.3", Address: "10.0.0.1:8443", StartedAt: f.at(0),
		Lease: time.Minute, Services: []string{"job expiry", "incident reconciler"}, Now: f.at(d)}
	if mod != nil {
		mod(&p)
	}
	r, err := f.s.ReplicaHeartbeat(f.ctx, p)
	noErr(f, err, "ReplicaHeartbeat")
	return r
}

// subjects names changes as source/event/subject.
func subjects(changes []store.IncidentChange) []string {
	out := []string{}
	for _, c := range changes {
		out = append(out, c.Incident.Source+"/"+string(c.Event.Kind)+"/"+c.Incident.Subject)
	}
	return out
}

// planeChange is the only change, checked to be a plane incident (no node) on subject.
func planeChange(f *fx, changes []store.IncidentChange, want string) store.IncidentChange {
	f.Helper()
	if len(changes) == 0 {
		f.Fatalf("no change, want %s", want)
	}
	c := changes[0]
	if got := c.Incident.Source + "/" + string(c.Event.Kind) + "/" + c.Incident.Subject; got != want {
		f.Fatalf("change %s, want %s (all: %v)", got, want, subjects(changes))
	}
	if c.Incident.NodeID != "" || c.Incident.NodeName != "" {
		f.Fatalf("plane incident has a node: %+v", c.Incident)
	}
	return c
}

var healthTests = []test{
	{"Health/ReplicaMissingAndForgotten", func(f *fx) {
		f.beat("plane-a", 0, nil)
		f.beat("plane-b", 0, nil)
		same(f, "within the lease", subjects(f.reconcile(50*time.Second, hooks)), []string{})
		f.beat("plane-a", 50*time.Second, nil) // plane-b stops
		ch := planeChange(f, f.reconcile(90*time.Second, hooks), "plane:replica_missing/opened/plane-b")
		if ch.Notifications != len(hooks) || ch.Incident.Severity != store.SeverityCritical ||
			!strings.Contains(ch.Incident.Summary, "plane-b") {
			f.Fatalf("missing replica incident: %+v", ch)
		}
		// A replica still heartbeating cannot be forgotten; an unknown one is not found.
		_, err := f.s.ReplicaForget(f.ctx, store.ReplicaForgetParams{By: "alice", ID: "plane-a", Now: f.at(90 * time.Second)})
		testkit.WantCode(f, err, errcode.ReplicaAlive)
		_, err = f.s.ReplicaForget(f.ctx, store.ReplicaForgetParams{By: "alice", ID: "plane-z", Now: f.at(90 * time.Second)})
		testkit.WantCode(f, err, errcode.ReplicaNotFound)

		// It comes back: cleared (and resolved, nobody having looked).
		f.beat("plane-b", 2*time.Minute, nil)
		f.beat("plane-a", 2*time.Minute, nil)
		same(f, "back", subjects(f.reconcile(2*time.Minute, hooks)),
			[]string{"plane:replica_missing/cleared/plane-b", "plane:replica_missing/triage/plane-b"})

		// It stops for good and is forgotten: the incident reopens, then clears with the row gone.
		f.beat("plane-a", 4*time.Minute, nil)
		planeChange(f, f.reconcile(4*time.Minute, hooks), "plane:replica_missing/reopened/plane-b")
		gone, err := f.s.ReplicaForget(f.ctx, store.ReplicaForgetParams{By: "alice", ID: "plane-b", Now: f.at(4 * time.Minute)})
		noErr(f, err, "ReplicaForget")
		if gone.ID != "plane-b" || !gone.Missing {
			f.Fatalf("forgotten %+v", gone)
		}
		cl := planeChange(f, f.reconcile(4*time.Minute, hooks), "plane:replica_missing/cleared/plane-b")
		evs, err := f.s.IncidentEventList(f.ctx, store.IncidentEventListParams{ID: cl.Incident.ID})
		noErr(f, err, "IncidentEventList")
		if note := evs[len(evs)-3]; note.Kind != store.EventNote || note.Actor != "alice" || !strings.Contains(note.Text, "plane-b") {
			f.Fatalf("timeline %+v: the forget is not noted before the clear", evs)
		}
		reps, err := f.s.ReplicaList(f.ctx, store.ReplicaListParams{Now: f.at(4 * time.Minute)})
		noErr(f, err, "ReplicaList")
		if len(reps) != 1 || reps[0].ID != "plane-a" || reps[0].Missing || len(reps[0].Services) != 2 {
			f.Fatalf("replicas %+v", reps)
		}
	}},
	{"Health/ReplicaMissingWaitsForThePlaneToBeUp", func(f *fx) {
		f.beat("plane-a", 0, nil)
		at := func(d, up time.Duration) []string {
			res, err := f.s.IncidentReconcile(f.ctx, store.IncidentReconcileParams{Now: f.at(d), Up: f.at(up), Notify: hooks})
			noErr(f, err, "IncidentReconcile")
			return subjects(res.Changes)
		}
		// A plane back from an outage (up at 10m) has heard nobody yet: it does not judge for a lease.
		same(f, "just up", at(10*time.Minute+30*time.Second, 10*time.Minute), []string{})
		same(f, "up a lease", at(11*time.Minute+time.Second, 10*time.Minute), []string{"plane:replica_missing/opened/plane-a"})
		// Restarted again: the open incident is held, neither cleared nor opened twice.
		same(f, "held", at(20*time.Minute+30*time.Second, 20*time.Minute), []string{})
		f.beat("plane-a", 21*time.Minute, nil)
		same(f, "back", at(21*time.Minute, 20*time.Minute), []string{"plane:replica_missing/cleared/plane-a", "plane:replica_missing/triage/plane-a"})
	}},
	{"Health/MemoryPeakAndAlert", func(f *fx) {
		const limit = 1000 << 20
		mem := func(rss, heap int64, alert float64) func(*store.ReplicaHeartbeatParams) {
			return func(p *store.ReplicaHeartbeatParams) {
				p.RSSBytes, p.HeapBytes, p.MemoryLimitBytes, p.MemoryAlert = rss, heap, limit, alert
			}
		}
		f.beat("plane-a", 0, mem(100<<20, 50<<20, 0.8))
		same(f, "under", subjects(f.reconcile(0, hooks)), []string{})
		f.beat("plane-a", 10*time.Second, mem(900<<20, 700<<20, 0.8))
		ch := planeChange(f, f.reconcile(10*time.Second, hooks), "plane:memory/opened/plane-a")
		if !strings.Contains(ch.Incident.Summary, "90%") || ch.Incident.Severity != store.SeverityWarning {
			f.Fatalf("memory incident %+v", ch.Incident)
		}
		f.beat("plane-a", 20*time.Second, mem(200<<20, 100<<20, 0.8))
		same(f, "back under", subjects(f.reconcile(20*time.Second, hooks)),
			[]string{"plane:memory/cleared/plane-a", "plane:memory/triage/plane-a"})
		// The peak survives a restart of the same replica id; an alert of 0 never raises.
		r := f.beat("plane-a", 30*time.Second, func(p *store.ReplicaHeartbeatParams) {
			mem(990<<20, 10<<20, 0)(p)
			p.StartedAt = f.at(25 * time.Second)
		})
		if r.PeakRSSBytes != 990<<20 || r.PeakHeapBytes != 700<<20 || !r.PeakAt.Equal(f.at(30*time.Second)) ||
			!r.StartedAt.Equal(f.at(25*time.Second)) || r.RSSBytes != 990<<20 {
			f.Fatalf("after restart %+v", r)
		}
		same(f, "alert off", subjects(f.reconcile(30*time.Second, hooks)), []string{})
		r = f.beat("plane-a", 40*time.Second, mem(10<<20, 10<<20, 0))
		if r.PeakRSSBytes != 990<<20 || !r.PeakAt.Equal(f.at(30*time.Second)) {
			f.Fatalf("peak not kept: %+v", r)
		}
		// Memory of a replica gone silent is left to plane:replica_missing.
		f.beat("plane-a", 50*time.Second, mem(950<<20, 10<<20, 0.5))
		planeChange(f, f.reconcile(50*time.Second, hooks), "plane:memory/reopened/plane-a")
		same(f, "silent", subjects(f.reconcile(5*time.Minute, hooks)), []string{
			"plane:memory/cleared/plane-a", "plane:memory/triage/plane-a", "plane:replica_missing/opened/plane-a"})
	}},
	{"Health/RouteFailing", func(f *fx) {
		route := "POST /api/v1/admin/jobs"
		counts := func(minute time.Duration, req, fail int64, codes map[int]int64) func(*store.ReplicaHeartbeatParams) {
			return func(p *store.ReplicaHeartbeatParams) {
				p.Routes = []store.RouteCount{{Route: route, Minute: f.at(minute).Truncate(time.Minute), Requests: req, Failures: fail, Codes: codes},
					{Route: "GET /healthz", Minute: f.at(minute).Truncate(time.Minute), Requests: 100}}
			}
		}
		// Too few requests to judge, however many failed.
		f.beat("plane-a", 0, counts(0, 10, 10, map[int]int64{500: 10}))
		same(f, "few", subjects(f.reconcile(0, hooks)), []string{})
		// Two replicas' counts add up; a heartbeat sent again replaces its counts rather than adding.
		f.beat("plane-a", 10*time.Second, counts(0, 12, 11, map[int]int64{500: 11}))
		f.beat("plane-a", 10*time.Second, counts(0, 12, 11, map[int]int64{500: 11}))
		f.beat("plane-b", 10*time.Second, counts(0, 10, 9, map[int]int64{503: 9}))
		ch := planeChange(f, f.reconcile(10*time.Second, hooks), "plane:route_failing/opened/"+route)
		for _, want := range []string{"20 of 22", "500×11", "503×9", route} {
			if !strings.Contains(ch.Incident.Summary, want) {
				f.Fatalf("summary %q lacks %q", ch.Incident.Summary, want)
			}
		}
		// It recovers: successes dilute the window until the share is under the threshold.
		f.beat("plane-a", 70*time.Second, counts(70*time.Second, 40, 0, nil))
		same(f, "recovered", subjects(f.reconcile(70*time.Second, hooks)),
			[]string{"plane:route_failing/cleared/" + route, "plane:route_failing/triage/" + route})
		// A bad count is refused.
		_, err := f.s.ReplicaHeartbeat(f.ctx, store.ReplicaHeartbeatParams{ID: "plane-a", StartedAt: f.at(0), Now: f.at(80 * time.Second),
			Routes: []store.RouteCount{{Route: route, Minute: f.at(0), Requests: 1, Failures: 2}}})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Health/DriverFailing", func(f *fx) {
		_, err := f.s.DriverEnable(f.ctx, store.DriverSetParams{Name: "dns-memory", Digest: digest([]byte("d")), By: "alice", Now: f.at(0)})
		noErr(f, err, "DriverEnable")
		call := func(d time.Duration, op, code string) {
			f.Helper()
			_, err := f.s.DriverCallAdd(f.ctx, store.DriverCallAddParams{Actor: "alice", Driver: "dns-memory", Operation: op,
				Code: code, Now: f.at(d)})
			noErr(f, err, "DriverCallAdd")
		}
		call(0, store.OpDNSListZones, store.CodeOK)
		// Provider refusals are not the driver failing; four timeouts are not yet five.
		for i := range 4 {
			call(time.Duration(i+1)*time.Second, store.OpDNSGetRecords, errcode.DNSNotFound)
			call(time.Duration(i+1)*time.Second, store.OpDNSGetRecords, errcode.DriverTimeout)
		}
		same(f, "four", subjects(f.reconcile(10*time.Second, hooks)), []string{})
		call(11*time.Second, store.OpDNSGetRecords, errcode.DriverTimeout)
		ch := planeChange(f, f.reconcile(12*time.Second, hooks), "plane:driver_failing/opened/dns-memory")
		if !strings.Contains(ch.Incident.Summary, "5 calls failed in a row") {
			f.Fatalf("summary %q", ch.Incident.Summary)
		}
		call(20*time.Second, store.OpDNSGetRecords, store.CodeOK)
		same(f, "answers again", subjects(f.reconcile(20*time.Second, hooks)),
			[]string{"plane:driver_failing/cleared/dns-memory", "plane:driver_failing/triage/dns-memory"})
		// Restarted more than twice in the window, with no success since: failing again.
		for i := range 3 {
			call(time.Duration(30+i)*time.Second, store.OpDriverRestart, errcode.DriverTimeout)
		}
		ch = planeChange(f, f.reconcile(40*time.Second, hooks), "plane:driver_failing/reopened/dns-memory")
		if !strings.Contains(ch.Incident.Summary, "restarted 3 times") {
			f.Fatalf("summary %q", ch.Incident.Summary)
		}
		// A disabled driver is not watched: its incident clears.
		_, err = f.s.DriverDisable(f.ctx, store.DriverSetParams{Name: "dns-memory", By: "alice", Now: f.at(50 * time.Second)})
		noErr(f, err, "DriverDisable")
		same(f, "disabled", subjects(f.reconcile(50*time.Second, hooks)),
			[]string{"plane:driver_failing/cleared/dns-memory", "plane:driver_failing/triage/dns-memory"})
	}},
	{"Health/PlaneIncidentsBesideNodeIncidents", func(f *fx) {
		n := f.node("web-1")
		f.beat("plane-a", 0, nil)
		f.beat("plane-b", 0, nil)
		got := subjects(f.reconcile(11*time.Minute, hooks))
		same(f, "both", got, []string{"plane:agent_silent/opened/", "plane:replica_missing/opened/plane-a",
			"plane:replica_missing/opened/plane-b"})
		all, err := f.s.IncidentList(f.ctx, store.IncidentListParams{Now: f.at(11 * time.Minute)})
		noErr(f, err, "IncidentList")
		if len(all.Incidents) != 3 {
			f.Fatalf("list %+v", all.Incidents)
		}
		for _, inc := range all.Incidents {
			if (inc.Subject == "") != (inc.NodeID == n.ID) {
				f.Fatalf("incident %+v: a node's has no subject, the plane's no node", inc)
			}
		}
		mine, err := f.s.IncidentList(f.ctx, store.IncidentListParams{NodeID: n.ID, Now: f.at(11 * time.Minute)})
		noErr(f, err, "IncidentList by node")
		if len(mine.Incidents) != 1 || mine.Incidents[0].Source != store.DetectorAgentSilent {
			f.Fatalf("node's list %+v", mine.Incidents)
		}
		// A plane incident is triaged, noted and notified like a node's.
		id := all.Incidents[0].ID
		_, err = f.s.IncidentTriage(f.ctx, store.IncidentTriageParams{ID: id, Triage: store.TriageIgnored, By: "alice", Now: f.at(12 * time.Minute)})
		noErr(f, err, "IncidentTriage")
		_, err = f.s.IncidentNote(f.ctx, store.IncidentNoteParams{ID: id, By: "alice", Text: "known", Now: f.at(12 * time.Minute)})
		noErr(f, err, "IncidentNote")
		ns, err := f.s.NotificationList(f.ctx, store.NotificationListParams{IncidentID: id})
		noErr(f, err, "NotificationList")
		if len(ns) != len(hooks) {
			f.Fatalf("notifications %+v", ns)
		}
	}},
	{"Health/MigrationsCurrent", func(f *fx) {
		noErr(f, f.s.MigrationCheck(f.ctx), "MigrationCheck")
	}},
}
