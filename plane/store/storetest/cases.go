package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// openCase is a case report as an agent sends it when its escalation opens.
func (f *fx) openCase(id int64, recipe string, opened time.Duration) store.CaseReport {
	return store.CaseReport{ID: id, Recipe: recipe, State: store.CaseOpen, OpenedAt: f.at(opened),
		Summary: fmt.Sprintf("%s failed 4 times", recipe), Body: json.RawMessage(`{"mode":"repair","attempts":[]}`)}
}

// closed is the report of a case after its check passed.
func closed(c store.CaseReport, at time.Time) store.CaseReport {
	c.State, c.ClosedAt, c.Body = store.CaseClosed, at, nil
	return c
}

func withNotes(c store.CaseReport, at time.Time, seqs ...int64) store.CaseReport {
	c.Notes = nil
	for _, s := range seqs {
		c.Notes = append(c.Notes, store.CaseNote{Seq: s, At: at, Text: fmt.Sprintf("tick %d still fails", s)})
	}
	return c
}

// intake takes in cases for n at d and fails the test on an error of the call.
func (f *fx) intake(n store.Node, d time.Duration, notify []string, cases ...store.CaseReport) store.CaseIntakeResult {
	f.Helper()
	res, err := f.s.CaseIntake(f.ctx, store.CaseIntakeParams{NodeID: n.ID, Cases: cases, Now: f.at(d), Notify: notify})
	noErr(f, err, "CaseIntake")
	if len(res.Outcomes) != len(cases) {
		f.Fatalf("%d outcomes for %d cases", len(res.Outcomes), len(cases))
	}
	return res
}

// outcome fails the test unless the only outcome is result (and, for a refusal, carries code).
func outcome(f *fx, res store.CaseIntakeResult, i int, result store.CaseResult, code string) store.CaseOutcome {
	f.Helper()
	o := res.Outcomes[i]
	if o.Result != result {
		f.Fatalf("case %d: %s (%v), want %s", o.ID, o.Result, o.Err, result)
	}
	if code != "" {
		testkit.WantCode(f, o.Err, code)
	} else if o.Err != nil {
		f.Fatalf("case %d: unexpected refusal %v", o.ID, o.Err)
	}
	return o
}

func (f *fx) getCase(n store.Node, id int64) store.Case {
	f.Helper()
	c, err := f.s.CaseGet(f.ctx, store.CaseGetParams{NodeID: n.ID, ID: id})
	noErr(f, err, "CaseGet")
	return c
}

// incidentsOf lists n's incidents, newest first.
func (f *fx) incidentsOf(n store.Node, at time.Time) []store.Incident {
	f.Helper()
	res, err := f.s.IncidentList(f.ctx, store.IncidentListParams{NodeID: n.ID, Now: at})
	noErr(f, err, "IncidentList")
	return res.Incidents
}

// only fails the test unless n has exactly one incident, and returns it.
func (f *fx) only(n store.Node, at time.Time) store.Incident {
	f.Helper()
	list := f.incidentsOf(n, at)
	if len(list) != 1 {
		f.Fatalf("node %s has %d incidents, want 1: %+v", n.Name, len(list), list)
	}
	return list[0]
}

// timeline returns the kinds of an incident's events, in order.
func (f *fx) timeline(id string) []string {
	f.Helper()
	evs, err := f.s.IncidentEventList(f.ctx, store.IncidentEventListParams{ID: id})
	noErr(f, err, "IncidentEventList")
	var out []string
	for i, e := range evs {
		if e.Seq != i+1 || e.IncidentID != id {
			f.Fatalf("event %d of %s is %+v", i, id, e)
		}
		out = append(out, string(e.Kind))
	}
	return out
}

func (f *fx) notificationsOf(id string) []store.Notification {
	f.Helper()
	list, err := f.s.NotificationList(f.ctx, store.NotificationListParams{IncidentID: id})
	noErr(f, err, "NotificationList")
	return list
}

var hooks = []string{"pagerduty", "ops-json"}

var caseTests = []test{
	{"Case/NewOpenCaseOpensAnIncident", func(f *fx) {
		n := f.node("web-1")
		c := f.openCase(1, "disk_headroom", 0)
		res := f.intake(n, time.Minute, hooks, c)
		outcome(f, res, 0, store.CaseStored, "")
		got := f.getCase(n, 1)
		if got.State != store.CaseOpen || got.Recipe != "disk_headroom" || !got.OpenedAt.Equal(c.OpenedAt) ||
			got.Summary != c.Summary || !jsonEqual(got.Body, c.Body) || !got.ReceivedAt.Equal(f.at(time.Minute)) {
			f.Fatalf("case %+v", got)
		}
		inc := f.only(n, f.at(time.Minute))
		if inc.Source != "recipe:disk_headroom" || inc.Severity != store.SeverityWarning || inc.Condition != store.ConditionOpen ||
			inc.Triage != store.TriageNew || !inc.NeedsYou || inc.CaseID != 1 || inc.Summary != c.Summary ||
			inc.NodeName != "web-1" || !inc.OpenedAt.Equal(f.at(time.Minute)) {
			f.Fatalf("incident %+v", inc)
		}
		same(f, "timeline", f.timeline(inc.ID), []string{"opened"})
		if len(res.Changes) != 1 || res.Changes[0].Event.Kind != store.EventOpened || res.Changes[0].Notifications != 2 {
			f.Fatalf("changes %+v", res.Changes)
		}
		ns := f.notificationsOf(inc.ID)
		if len(ns) != 2 || ns[0].Webhook == ns[1].Webhook {
			f.Fatalf("notifications %+v", ns)
		}
		for _, x := range ns {
			if x.State != store.NotificationPending || x.Kind != store.EventOpened || x.EventSeq != 1 || x.Attempts != 0 {
				f.Fatalf("notification %+v", x)
			}
		}
	}},
	{"Case/NotesAppendWithoutIncidentEvents", func(f *fx) {
		n := f.node("web-1")
		c := f.openCase(1, "unit_health", 0)
		f.intake(n, 0, hooks, c)
		// Each claim carries the notes the plane may not have; a claim sent again carries them again.
		res := f.intake(n, 10*time.Minute, hooks, withNotes(c, f.at(10*time.Minute), 1))
		if o := outcome(f, res, 0, store.CaseUpdated, ""); o.NotesAdded != 1 {
			f.Fatalf("outcome %+v", o)
		}
		res = f.intake(n, 11*time.Minute, hooks, withNotes(c, f.at(10*time.Minute), 1))
		outcome(f, res, 0, store.CaseUnchanged, "")
		res = f.intake(n, 20*time.Minute, hooks, withNotes(c, f.at(20*time.Minute), 1, 2, 3))
		if o := outcome(f, res, 0, store.CaseUpdated, ""); o.NotesAdded != 2 {
			f.Fatalf("outcome %+v", o)
		}
		got := f.getCase(n, 1)
		if len(got.Notes) != 3 || got.Notes[0].Seq != 1 || got.Notes[2].Seq != 3 || got.Notes[0].Author != store.AuthorNode ||
			got.Notes[0].Text != "tick 1 still fails" {
			f.Fatalf("notes %+v", got.Notes)
		}
		// A failing tick is a note on the case, never an event on the incident.
		inc := f.only(n, f.at(time.Hour))
		same(f, "timeline", f.timeline(inc.ID), []string{"opened"})
		if len(res.Changes) != 0 || len(f.notificationsOf(inc.ID)) != 2 {
			f.Fatalf("notes wrote changes %+v", res.Changes)
		}
	}},
	{"Case/CloseClearsAndResolvesUnseen", func(f *fx) {
		n := f.node("web-1")
		c := f.openCase(1, "unit_health", 0)
		f.intake(n, 0, hooks, c)
		res := f.intake(n, 30*time.Minute, hooks, closed(c, f.at(29*time.Minute)))
		if o := outcome(f, res, 0, store.CaseUpdated, ""); !o.Closed {
			f.Fatalf("outcome %+v", o)
		}
		got := f.getCase(n, 1)
		if got.State != store.CaseClosed || got.ClosedBy != store.AuthorNode || !got.ClosedAt.Equal(f.at(29*time.Minute)) {
			f.Fatalf("case %+v", got)
		}
		inc := f.only(n, f.at(time.Hour))
		if inc.Condition != store.ConditionCleared || inc.Triage != store.TriageResolved || inc.TriagedBy != "plane" ||
			inc.Reason != "cleared before anyone looked" || inc.NeedsYou || !inc.ClearedAt.Equal(f.at(30*time.Minute)) {
			f.Fatalf("incident %+v", inc)
		}
		same(f, "timeline", f.timeline(inc.ID), []string{"opened", "cleared", "triage"})
		// The closed summary rides every claim until a newer case replaces it: nothing more happens.
		res = f.intake(n, 31*time.Minute, hooks, closed(c, f.at(29*time.Minute)))
		outcome(f, res, 0, store.CaseUnchanged, "")
		same(f, "timeline again", f.timeline(inc.ID), []string{"opened", "cleared", "triage"})
		// The close told each webhook that heard of the opening, once; the summary riding again tells none.
		if ns := f.notificationsOf(inc.ID); len(ns) != 4 || ns[2].Kind != store.EventCleared || ns[3].Kind != store.EventCleared {
			f.Fatalf("notifications %+v", ns)
		}
	}},
	{"Case/CloseKeepsAPersonsTriage", func(f *fx) {
		n := f.node("web-1")
		c := f.openCase(1, "unit_health", 0)
		f.intake(n, 0, nil, c)
		inc := f.only(n, f.at(0))
		_, err := f.s.IncidentTriage(f.ctx, store.IncidentTriageParams{ID: inc.ID, Triage: store.TriageIgnored, By: "alice", Now: f.at(time.Minute)})
		noErr(f, err, "IncidentTriage")
		f.intake(n, 5*time.Minute, nil, closed(c, f.at(5*time.Minute)))
		inc = f.only(n, f.at(time.Hour))
		if inc.Condition != store.ConditionCleared || inc.Triage != store.TriageIgnored || inc.TriagedBy != "alice" {
			f.Fatalf("incident %+v", inc)
		}
		same(f, "timeline", f.timeline(inc.ID), []string{"opened", "triage", "cleared"})
	}},
	{"Case/ClosedIDIsNeverReopened", func(f *fx) {
		n := f.node("web-1")
		c := f.openCase(1, "unit_health", 0)
		f.intake(n, 0, nil, c)
		f.intake(n, time.Minute, nil, closed(c, f.at(time.Minute)))
		before := f.getCase(n, 1)
		inc := f.only(n, f.at(0))
		res := f.intake(n, 2*time.Minute, hooks, withNotes(c, f.at(2*time.Minute), 1))
		outcome(f, res, 0, store.CaseRefused, errcode.CaseClosed)
		same(f, "case", f.getCase(n, 1), before)
		same(f, "incident", f.only(n, f.at(0)), inc)
	}},
	{"Case/HigherOpenIDClosesTheOlder", func(f *fx) {
		n := f.node("web-1")
		f.intake(n, 0, hooks, f.openCase(3, "unit_health", 0))
		inc := f.only(n, f.at(0))
		// The node closed case 3 and opened case 5; the plane never heard the close.
		res := f.intake(n, time.Hour, hooks, f.openCase(5, "unit_health", 50*time.Minute))
		if o := outcome(f, res, 0, store.CaseStored, ""); o.Superseded != 3 {
			f.Fatalf("outcome %+v", o)
		}
		old := f.getCase(n, 3)
		if old.State != store.CaseClosed || old.ClosedBy != store.AuthorPlane || !old.ClosedAt.Equal(f.at(time.Hour)) ||
			len(old.Notes) != 1 || old.Notes[0].Author != store.AuthorPlane || !strings.Contains(old.Notes[0].Text, "close went unheard") {
			f.Fatalf("superseded case %+v", old)
		}
		if c := f.getCase(n, 5); c.State != store.CaseOpen {
			f.Fatalf("new case %+v", c)
		}
		// The condition never stopped: the same incident follows the new case, with a note, and
		// notifies nobody again.
		got := f.only(n, f.at(time.Hour))
		if got.ID != inc.ID || got.CaseID != 5 || got.Condition != store.ConditionOpen {
			f.Fatalf("incident %+v", got)
		}
		same(f, "timeline", f.timeline(inc.ID), []string{"opened", "note"})
		if len(f.notificationsOf(inc.ID)) != 2 {
			f.Fatal("a superseding case notified again")
		}
		// A lower id is refused, open or closed, known or not.
		res = f.intake(n, 2*time.Hour, hooks, f.openCase(4, "unit_health", 0))
		outcome(f, res, 0, store.CaseRefused, errcode.CaseSuperseded)
		res = f.intake(n, 2*time.Hour, hooks, closed(f.openCase(4, "unit_health", 0), f.at(time.Minute)))
		outcome(f, res, 0, store.CaseRefused, errcode.CaseSuperseded)
		res = f.intake(n, 2*time.Hour, hooks, f.openCase(3, "unit_health", 0))
		outcome(f, res, 0, store.CaseRefused, errcode.CaseClosed)
		_, err := f.s.CaseGet(f.ctx, store.CaseGetParams{NodeID: n.ID, ID: 4})
		testkit.WantCode(f, err, errcode.CaseNotFound)
		// Another recipe's cases are their own.
		res = f.intake(n, 2*time.Hour, hooks, f.openCase(4, "disk_headroom", 0))
		outcome(f, res, 0, store.CaseStored, "")
	}},
	{"Case/OpenCasesPerNodeAreCapped", func(f *fx) {
		n := f.node("web-1")
		in := func(d time.Duration, cases ...store.CaseReport) store.CaseIntakeResult {
			f.Helper()
			res, err := f.s.CaseIntake(f.ctx, store.CaseIntakeParams{NodeID: n.ID, Cases: cases, Now: f.at(d), MaxOpen: 2})
			noErr(f, err, "CaseIntake")
			return res
		}
		res := in(0, f.openCase(1, "a", 0), f.openCase(2, "b", 0), f.openCase(3, "c", 0))
		outcome(f, res, 0, store.CaseStored, "")
		outcome(f, res, 1, store.CaseStored, "")
		if o := outcome(f, res, 2, store.CaseRefused, errcode.CaseTooManyOpen); o.Err.(*errcode.Error).Details["max"] != 2 {
			f.Fatalf("refusal %+v", o.Err)
		}
		if len(f.incidentsOf(n, f.at(0))) != 2 {
			f.Fatal("a refused case opened an incident")
		}
		// A superseding case takes its predecessor's place; a closed one takes none.
		res = in(time.Minute, f.openCase(4, "a", 0), closed(f.openCase(5, "d", 0), f.at(0)))
		outcome(f, res, 0, store.CaseStored, "")
		outcome(f, res, 1, store.CaseStored, "")
		// Closing one frees a place.
		res = in(2*time.Minute, closed(f.openCase(2, "b", 0), f.at(time.Minute)), f.openCase(6, "c", 0))
		outcome(f, res, 0, store.CaseUpdated, "")
		outcome(f, res, 1, store.CaseStored, "")
	}},
	{"Case/BodyIsKeptOnce", func(f *fx) {
		n := f.node("web-1")
		c := f.openCase(1, "unit_health", 0)
		c.Body = nil
		res := f.intake(n, 0, nil, c)
		outcome(f, res, 0, store.CaseStored, "")
		if f.getCase(n, 1).Body != nil {
			f.Fatal("a body appeared from nowhere")
		}
		c.Body = json.RawMessage(`{"mode":"report-only","attempts":[{"n":1}]}`)
		res = f.intake(n, time.Minute, nil, c)
		outcome(f, res, 0, store.CaseUpdated, "")
		c.Body = json.RawMessage(`{"mode":"repair","attempts":[]}`)
		res = f.intake(n, 2*time.Minute, nil, c)
		outcome(f, res, 0, store.CaseUnchanged, "")
		if got := f.getCase(n, 1).Body; !jsonEqual(got, []byte(`{"mode":"report-only","attempts":[{"n":1}]}`)) {
			f.Fatalf("body %s", got)
		}
	}},
	{"Case/FirstHeardClosed", func(f *fx) {
		n := f.node("web-1")
		c := closed(withNotes(f.openCase(7, "cert_expiry", 0), f.at(time.Minute), 1, 2), f.at(20*time.Minute))
		res := f.intake(n, time.Hour, hooks, c)
		if o := outcome(f, res, 0, store.CaseStored, ""); !o.Closed || o.NotesAdded != 2 {
			f.Fatalf("outcome %+v", o)
		}
		if got := f.getCase(n, 7); got.State != store.CaseClosed || got.ClosedBy != store.AuthorNode || len(got.Notes) != 2 {
			f.Fatalf("case %+v", got)
		}
		// It happened while the plane was not listening: on the record, resolved, and nobody paged.
		inc := f.only(n, f.at(time.Hour))
		if inc.Condition != store.ConditionCleared || inc.Triage != store.TriageResolved || inc.NeedsYou {
			f.Fatalf("incident %+v", inc)
		}
		same(f, "timeline", f.timeline(inc.ID), []string{"opened", "cleared", "triage"})
		if ns := f.notificationsOf(inc.ID); len(ns) != 0 {
			f.Fatalf("notifications %+v", ns)
		}
	}},
	{"Case/ComesBackWithinTheHourReopens", func(f *fx) {
		n := f.node("web-1")
		f.intake(n, 0, hooks, f.openCase(1, "unit_health", 0))
		f.intake(n, 10*time.Minute, hooks, closed(f.openCase(1, "unit_health", 0), f.at(10*time.Minute)))
		first := f.only(n, f.at(0))
		res := f.intake(n, 50*time.Minute, hooks, f.openCase(2, "unit_health", 50*time.Minute))
		outcome(f, res, 0, store.CaseStored, "")
		inc := f.only(n, f.at(50*time.Minute))
		if inc.ID != first.ID || inc.Condition != store.ConditionOpen || inc.Triage != store.TriageNew || !inc.NeedsYou ||
			inc.CaseID != 2 || !inc.ClearedAt.IsZero() || !inc.OpenedAt.Equal(first.OpenedAt) {
			f.Fatalf("reopened incident %+v", inc)
		}
		same(f, "timeline", f.timeline(inc.ID), []string{"opened", "cleared", "triage", "reopened"})
		ns := f.notificationsOf(inc.ID)
		if len(ns) != 6 || ns[2].Kind != store.EventCleared || ns[4].Kind != store.EventReopened || ns[4].EventSeq != 4 {
			f.Fatalf("notifications %+v", ns)
		}
		// Cleared for more than an hour, it is a new incident.
		f.intake(n, time.Hour, hooks, closed(f.openCase(2, "unit_health", 0), f.at(time.Hour)))
		f.intake(n, 2*time.Hour+time.Second, hooks, f.openCase(3, "unit_health", 2*time.Hour))
		list := f.incidentsOf(n, f.at(3*time.Hour))
		if len(list) != 2 || list[1].ID != first.ID || list[0].CaseID != 3 || list[0].Condition != store.ConditionOpen {
			f.Fatalf("incidents %+v", list)
		}
		same(f, "new timeline", f.timeline(list[0].ID), []string{"opened"})
	}},
	{"Case/NodeTextIsKeptAsGiven", func(f *fx) {
		n := f.node("web-1")
		c := f.openCase(1, "unit_health", 0)
		c.Summary = "\x1b]0;owned\x07\x1b[2J unit \u202e failed\r\n<b>x</b> \u00e9"
		c = withNotes(c, f.at(0), 1)
		c.Notes[0].Text = "\x1b[31mred\x1b[0m\ttab"
		f.intake(n, 0, nil, c)
		got := f.getCase(n, 1)
		if got.Summary != c.Summary || got.Notes[0].Text != c.Notes[0].Text || f.only(n, f.at(0)).Summary != c.Summary {
			f.Fatalf("node text changed on the way: %q / %q", got.Summary, got.Notes[0].Text)
		}
	}},
	{"Case/NotesPerCaseAreCapped", func(f *fx) {
		n := f.node("web-1")
		c := f.openCase(1, "unit_health", 0)
		f.intake(n, 0, nil, c)
		seq := int64(0)
		for range store.MaxCaseNotesKept / store.MaxCaseNotes {
			var seqs []int64
			for range store.MaxCaseNotes {
				seq++
				seqs = append(seqs, seq)
			}
			f.intake(n, time.Minute, nil, withNotes(c, f.at(time.Minute), seqs...))
		}
		left := store.MaxCaseNotesKept - int(seq)
		var seqs []int64
		for range left + 2 {
			seq++
			seqs = append(seqs, seq)
		}
		res := f.intake(n, 2*time.Minute, nil, withNotes(c, f.at(2*time.Minute), seqs...))
		if o := outcome(f, res, 0, store.CaseUpdated, ""); o.NotesAdded != left || !o.Capped {
			f.Fatalf("outcome %+v (want %d notes added and capped)", o, left)
		}
		if got := f.getCase(n, 1); len(got.Notes) != store.MaxCaseNotesKept {
			f.Fatalf("%d notes kept", len(got.Notes))
		}
	}},
	{"Case/ReportsBreakingTheContract", func(f *fx) {
		n := f.node("web-1")
		good := f.openCase(1, "unit_health", 0)
		bad := map[string]func(*store.CaseReport){
			"zero id":           func(c *store.CaseReport) { c.ID = 0 },
			"negative id":       func(c *store.CaseReport) { c.ID = -4 },
			"recipe":            func(c *store.CaseReport) { c.Recipe = "../etc" },
			"empty recipe":      func(c *store.CaseReport) { c.Recipe = "" },
			"state":             func(c *store.CaseReport) { c.State = "reopened" },
			"no opened_at":      func(c *store.CaseReport) { c.OpenedAt = time.Time{} },
			"opened in 1970":    func(c *store.CaseReport) { c.OpenedAt = time.Unix(1, 0) },
			"open with close":   func(c *store.CaseReport) { c.ClosedAt = c.OpenedAt },
			"closed no close":   func(c *store.CaseReport) { c.State = store.CaseClosed },
			"long summary":      func(c *store.CaseReport) { c.Summary = strings.Repeat("x", store.MaxCaseText+1) },
			"NUL in summary":    func(c *store.CaseReport) { c.Summary = "a\x00b" },
			"bad UTF-8":         func(c *store.CaseReport) { c.Summary = "a\xffb" },
			"too many notes":    func(c *store.CaseReport) { *c = withNotes(*c, f.at(0), seqRange(store.MaxCaseNotes+1)...) },
			"note seq 0":        func(c *store.CaseReport) { *c = withNotes(*c, f.at(0), 0) },
			"note twice":        func(c *store.CaseReport) { *c = withNotes(*c, f.at(0), 2, 2) },
			"note without time": func(c *store.CaseReport) { *c = withNotes(*c, time.Time{}, 1) },
			"note NUL":          func(c *store.CaseReport) { *c = withNotes(*c, f.at(0), 1); c.Notes[0].Text = "\x00" },
			"long note": func(c *store.CaseReport) {
				*c = withNotes(*c, f.at(0), 1)
				c.Notes[0].Text = strings.Repeat("y", store.MaxCaseText+1)
			},
			"body not JSON": func(c *store.CaseReport) { c.Body = json.RawMessage(`{"mode":`) },
			"body over its cap": func(c *store.CaseReport) {
				c.Body = json.RawMessage(`"` + strings.Repeat("z", store.MaxCaseBody) + `"`)
			},
		}
		for name, edit := range bad {
			c := good
			edit(&c)
			if err := c.Check(); !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("%s: Check = %v", name, err)
			}
			_, err := f.s.CaseIntake(f.ctx, store.CaseIntakeParams{NodeID: n.ID, Cases: []store.CaseReport{good, c}, Now: f.at(0)})
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("%s: CaseIntake = %v", name, err)
			}
		}
		_, err := f.s.CaseIntake(f.ctx, store.CaseIntakeParams{NodeID: n.ID, Cases: []store.CaseReport{good, good}, Now: f.at(0)})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		_, err = f.s.CaseIntake(f.ctx, store.CaseIntakeParams{NodeID: n.ID, Cases: []store.CaseReport{good}, Notify: []string{"Bad Name"}})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		many := make([]store.CaseReport, store.MaxCases+1)
		for i := range many {
			many[i] = f.openCase(int64(i+1), fmt.Sprintf("r%d", i), 0)
		}
		_, err = f.s.CaseIntake(f.ctx, store.CaseIntakeParams{NodeID: n.ID, Cases: many})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		// Nothing of a refused call was recorded.
		_, err = f.s.CaseGet(f.ctx, store.CaseGetParams{NodeID: n.ID, ID: 1})
		testkit.WantCode(f, err, errcode.CaseNotFound)
		if len(f.incidentsOf(n, f.at(0))) != 0 {
			f.Fatal("a refused intake opened an incident")
		}
		_, err = f.s.CaseIntake(f.ctx, store.CaseIntakeParams{NodeID: "node_missing", Cases: []store.CaseReport{good}})
		testkit.WantCode(f, err, errcode.NodeNotFound)
	}},
	{"Case/EndedNodeTakesNone", func(f *fx) {
		n := f.node("web-1")
		_, err := f.s.NodeDisconnect(f.ctx, store.NodeEndParams{ID: n.ID, Now: f.at(0)})
		noErr(f, err, "NodeDisconnect")
		_, err = f.s.CaseIntake(f.ctx, store.CaseIntakeParams{NodeID: n.ID, Cases: []store.CaseReport{f.openCase(1, "a", 0)}})
		testkit.WantCode(f, err, errcode.NodeNotActive)
	}},
	{"Case/List", func(f *fx) {
		n := f.node("web-1")
		other := f.node("web-2")
		f.intake(n, 0, nil, f.openCase(1, "a", 0), f.openCase(2, "b", 0))
		f.intake(other, 0, nil, f.openCase(1, "a", 0))
		list, err := f.s.CaseList(f.ctx, store.CaseListParams{NodeID: n.ID})
		noErr(f, err, "CaseList")
		if len(list) != 2 || list[0].ID != 2 || list[1].ID != 1 || list[0].Body != nil {
			f.Fatalf("cases %+v", list)
		}
	}},
}

func seqRange(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}
