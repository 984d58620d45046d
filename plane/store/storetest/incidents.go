package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// reconcile runs the detectors at d and returns the changes.
func (f *fx) reconcile(d time.Duration, notify []string) []store.IncidentChange {
	f.Helper()
	res, err := f.s.IncidentReconcile(f.ctx, store.IncidentReconcileParams{Now: f.at(d), Notify: notify})
	noErr(f, err, "IncidentReconcile")
	return res.Changes
}

// kinds names changes as source/event.
func kinds(changes []store.IncidentChange) []string {
	out := []string{}
	for _, c := range changes {
		out = append(out, c.Incident.Source+"/"+string(c.Event.Kind))
	}
	return out
}

// seen records a claim from n at d.
func (f *fx) seen(n store.Node, d time.Duration, untrusted string) {
	f.Helper()
	_, err := f.s.NodeReport(f.ctx, store.NodeReportParams{ID: n.ID, Now: f.at(d), Vocabulary: n.Vocabulary, Idle: true,
		Untrusted: untrusted})
	noErr(f, err, "NodeReport")
}

// finish runs one job of n to the outcome at d.
func (f *fx) finish(n store.Node, d time.Duration, outcome store.JobState) {
	f.Helper()
	p := f.jobParams(n, "disk_usage")
	p.Now = f.at(d)
	j, err := f.s.JobCreate(f.ctx, p)
	noErr(f, err, "JobCreate")
	f.claim(n, f.at(d))
	if outcome == store.JobLost {
		_, err = f.s.JobLoseRunning(f.ctx, store.JobLoseRunningParams{NodeID: n.ID, Now: f.at(d)})
	} else {
		_, err = f.s.JobFinish(f.ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: outcome, Code: errcode.PolicyRefused, Now: f.at(d)})
	}
	noErr(f, err, "finishing the job")
}

func (f *fx) incident(id string, d time.Duration) store.Incident {
	f.Helper()
	inc, err := f.s.IncidentGet(f.ctx, store.IncidentGetParams{ID: id, Now: f.at(d)})
	noErr(f, err, "IncidentGet")
	return inc
}

var incidentTests = []test{
	{"Incident/AgentSilent", func(f *fx) {
		n := f.node("web-1") // its last claim was at 0
		same(f, "at 9m", kinds(f.reconcile(9*time.Minute, hooks)), []string{})
		ch := f.reconcile(11*time.Minute, hooks)
		same(f, "at 11m", kinds(ch), []string{"plane:agent_silent/opened"})
		inc := ch[0].Incident
		if inc.Severity != store.SeverityCritical || inc.NodeID != n.ID || !inc.NeedsYou || ch[0].Notifications != 2 ||
			!strings.Contains(inc.Summary, f.at(0).Format(time.RFC3339)) {
			f.Fatalf("incident %+v", ch[0])
		}
		// Looking again changes nothing, however often.
		for i := range 5 {
			same(f, "again", kinds(f.reconcile(12*time.Minute+time.Duration(i)*time.Minute, hooks)), []string{})
		}
		f.seen(n, 20*time.Minute, "")
		same(f, "heard again", kinds(f.reconcile(20*time.Minute, hooks)), []string{"plane:agent_silent/cleared", "plane:agent_silent/triage"})
		got := f.incident(inc.ID, 20*time.Minute)
		if got.Condition != store.ConditionCleared || got.Triage != store.TriageResolved || got.Reason != "cleared before anyone looked" {
			f.Fatalf("cleared incident %+v", got)
		}
		// Silent again within the hour: the same incident reopens as new, and notifies again.
		ch = f.reconcile(31*time.Minute, hooks)
		same(f, "silent again", kinds(ch), []string{"plane:agent_silent/reopened"})
		if ch[0].Incident.ID != inc.ID || ch[0].Incident.Triage != store.TriageNew || ch[0].Notifications != 2 {
			f.Fatalf("reopened %+v", ch[0])
		}
		same(f, "timeline", f.timeline(inc.ID), []string{"opened", "cleared", "triage", "reopened"})
		ns := f.notificationsOf(inc.ID)
		if len(ns) != 6 || ns[3].Kind != store.EventCleared || ns[5].Kind != store.EventReopened {
			f.Fatalf("notifications %+v", ns)
		}
		// A person looks, then it clears: their triage stands.
		_, err := f.s.IncidentTriage(f.ctx, store.IncidentTriageParams{ID: inc.ID, Triage: store.TriageResolved, By: "alice",
			Reason: "rebooted it", Now: f.at(32 * time.Minute)})
		noErr(f, err, "IncidentTriage")
		f.seen(n, 33*time.Minute, "")
		same(f, "heard", kinds(f.reconcile(33*time.Minute, hooks)), []string{"plane:agent_silent/cleared"})
		if got := f.incident(inc.ID, time.Hour); got.TriagedBy != "alice" || got.Reason != "rebooted it" {
			f.Fatalf("incident %+v", got)
		}
		// Silent again more than an hour after it cleared: a new incident.
		ch = f.reconcile(33*time.Minute+time.Hour+time.Minute, hooks)
		same(f, "much later", kinds(ch), []string{"plane:agent_silent/opened"})
		if ch[0].Incident.ID == inc.ID {
			f.Fatal("an incident cleared over an hour ago reopened")
		}
	}},
	{"Incident/SilenceCountsFromThePlanesStart", func(f *fx) {
		n := f.node("web-1")
		p := store.IncidentReconcileParams{Now: f.at(time.Hour), Up: f.at(55 * time.Minute)}
		res, err := f.s.IncidentReconcile(f.ctx, p)
		noErr(f, err, "IncidentReconcile")
		same(f, "a plane up for 5 minutes", kinds(res.Changes), []string{})
		same(f, "up long enough", kinds(f.reconcile(time.Hour, nil)), []string{"plane:agent_silent/opened"})
		// A plane that cannot judge leaves the incident as it is, even once the node claims again.
		f.seen(n, time.Hour+time.Minute, "")
		p.Now = f.at(time.Hour + time.Minute)
		res, err = f.s.IncidentReconcile(f.ctx, p)
		noErr(f, err, "IncidentReconcile")
		same(f, "skipped", kinds(res.Changes), []string{})
		if f.only(n, f.at(0)).Condition != store.ConditionOpen {
			f.Fatal("a skipped detector cleared its incident")
		}
	}},
	{"Incident/Refusals", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		for i := range store.DefaultRefusalThreshold {
			f.finish(n, time.Duration(i)*time.Minute, store.JobRefused)
		}
		f.seen(n, 10*time.Minute, "")
		same(f, "at the threshold", kinds(f.reconcile(10*time.Minute, nil)), []string{})
		f.finish(n, 10*time.Minute, store.JobRefused)
		ch := f.reconcile(10*time.Minute, nil)
		same(f, "above it", kinds(ch), []string{"plane:refusals/opened"})
		if ch[0].Incident.Severity != store.SeverityWarning || !strings.Contains(ch[0].Incident.Summary, "6 jobs refused") {
			f.Fatalf("incident %+v", ch[0].Incident)
		}
		// Completed and failed jobs are not refusals.
		f.finish(n, 20*time.Minute, store.JobCompleted)
		f.seen(n, 20*time.Minute, "")
		same(f, "steady", kinds(f.reconcile(20*time.Minute, nil)), []string{})
		// An hour after the first refusal, the count falls back to the threshold.
		f.seen(n, 60*time.Minute, "")
		same(f, "an hour on", kinds(f.reconcile(60*time.Minute, nil)), []string{"plane:refusals/cleared", "plane:refusals/triage"})
	}},
	{"Incident/LostJobs", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		f.finish(n, time.Minute, store.JobLost)
		ch := f.reconcile(2*time.Minute, nil)
		same(f, "lost", kinds(ch), []string{"plane:lost_jobs/opened"})
		if !strings.Contains(ch[0].Incident.Summary, "1 jobs lost") {
			f.Fatalf("summary %q", ch[0].Incident.Summary)
		}
		f.seen(n, 61*time.Minute, "")
		same(f, "an hour on", kinds(f.reconcile(62*time.Minute, nil)), []string{"plane:lost_jobs/cleared", "plane:lost_jobs/triage"})
	}},
	{"Incident/UntrustedRelease", func(f *fx) {
		n := f.node("web-1")
		why := "statement.signature_invalid: \x1b[31mno held key\x1b[0m"
		f.seen(n, time.Minute, why)
		if got := f.getNode(n.ID); got.Untrusted != why {
			f.Fatalf("untrusted %q", got.Untrusted)
		}
		ch := f.reconcile(time.Minute, hooks)
		same(f, "untrusted", kinds(ch), []string{"plane:untrusted_release/opened"})
		if ch[0].Incident.Severity != store.SeverityCritical || !strings.HasSuffix(ch[0].Incident.Summary, why) {
			f.Fatalf("incident %+v", ch[0].Incident)
		}
		f.seen(n, 2*time.Minute, why)
		same(f, "still", kinds(f.reconcile(2*time.Minute, hooks)), []string{})
		f.seen(n, 3*time.Minute, "")
		same(f, "trusts again", kinds(f.reconcile(3*time.Minute, hooks)),
			[]string{"plane:untrusted_release/cleared", "plane:untrusted_release/triage"})
		_, err := f.s.NodeReport(f.ctx, store.NodeReportParams{ID: n.ID, Untrusted: "a\x00b"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Incident/AgentUpdateRefused", func(f *fx) {
		n := f.node("web-1")
		report := func(d time.Duration, state, offered string) {
			f.Helper()
			_, err := f.s.NodeReport(f.ctx, store.NodeReportParams{ID: n.ID, Now: f.at(d), Vocabulary: n.Vocabulary, Idle: true,
				Update: store.NodeUpdate{State: state, Offered: offered, Reason: "rolled back",
					History: []store.NodeUpdateEvent{{At: f.at(d), Event: "rolled_back", From: offered, To: "2.0.0"}}}})
			noErr(f, err, "NodeReport")
		}
		report(time.Minute, "rejected", "3.0.0")
		if got := f.getNode(n.ID).Update; got.State != "rejected" || got.Offered != "3.0.0" || len(got.History) != 1 || got.History[0].Event != "rolled_back" {
			f.Fatalf("stored update %+v", got)
		}
		same(f, "refused", kinds(f.reconcile(time.Minute, hooks)), []string{"plane:agent_update_refused/opened"})
		// A newer statement's agent is pending, then on trial: the incident stays open, and is not raised again.
		report(2*time.Minute, "pending", "4.0.0")
		same(f, "pending", kinds(f.reconcile(2*time.Minute, hooks)), []string{})
		report(3*time.Minute, "probe_failed", "4.0.0")
		same(f, "refused again", kinds(f.reconcile(3*time.Minute, hooks)), []string{})
		report(4*time.Minute, "current", "")
		same(f, "current", kinds(f.reconcile(4*time.Minute, hooks)),
			[]string{"plane:agent_update_refused/cleared", "plane:agent_update_refused/triage"})
		_, err := f.s.NodeReport(f.ctx, store.NodeReportParams{ID: n.ID, Update: store.NodeUpdate{State: "exploded"}})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Incident/ReleaseExpiring", func(f *fx) {
		n := f.node("web-1")
		day := 24 * time.Hour
		p := f.release(1)
		p.ExpiresAt = f.at(20 * day)
		_, err := f.s.ReleasePut(f.ctx, p)
		noErr(f, err, "ReleasePut")
		expiring := func(d time.Duration, lead time.Duration) []store.IncidentChange {
			res, err := f.s.IncidentReconcile(f.ctx, store.IncidentReconcileParams{Now: f.at(d), ExpiryLead: lead})
			noErr(f, err, "IncidentReconcile")
			return slices.DeleteFunc(res.Changes, func(c store.IncidentChange) bool { return c.Incident.Source != store.DetectorReleaseExpiring })
		}
		same(f, "20 days before", kinds(expiring(0, 0)), []string{})
		ch := expiring(7*day, 0) // the default lead, 14 days, now reaches it
		same(f, "13 days before", kinds(ch), []string{"plane:release_expiring/opened"})
		if inc := ch[0].Incident; inc.Subject != "release:1" || inc.Severity != store.SeverityWarning || !strings.Contains(inc.Summary, "1 active nodes") {
			f.Fatalf("incident %+v", inc)
		}
		// A newer release rolled out to the node: nobody is served the old one, the incident clears.
		p2 := f.release(2)
		p2.ExpiresAt = f.at(400 * day)
		_, err = f.s.ReleasePut(f.ctx, p2)
		noErr(f, err, "ReleasePut")
		_, err = f.s.NodeTargetSet(f.ctx, store.NodeTargetSetParams{ID: n.ID, Sequence: 2})
		noErr(f, err, "NodeTargetSet")
		same(f, "rolled out", kinds(expiring(8*day, 0)), []string{"plane:release_expiring/cleared", "plane:release_expiring/triage"})
		// A lead long enough reaches the new one too; a negative lead is refused.
		same(f, "a year's lead", kinds(expiring(8*day, 400*day)), []string{"plane:release_expiring/opened"})
		_, err = f.s.IncidentReconcile(f.ctx, store.IncidentReconcileParams{Now: f.at(8 * day), ExpiryLead: -time.Hour})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Incident/RolloutHalted", func(f *fx) {
		n := f.node("web-1")
		ro, err := f.s.RolloutCreate(f.ctx, store.RolloutCreateParams{Kind: store.RolloutJob, Word: "disk_usage", Selector: "all",
			Stages: []string{"all"}, Steps: []store.RolloutStepNew{{NodeID: n.ID, NodeName: n.Name}}, By: "tok-admin", Now: f.at(0)})
		noErr(f, err, "RolloutCreate")
		same(f, "running", kinds(f.reconcile(time.Minute, hooks)), []string{})
		_, err = f.s.RolloutMiss(f.ctx, store.RolloutMissParams{ID: ro.ID, NodeID: n.ID, NodeName: n.Name, Reason: "preflight failed", Now: f.at(time.Minute)})
		noErr(f, err, "RolloutMiss")
		ch := f.reconcile(2*time.Minute, hooks)
		same(f, "halted", kinds(ch), []string{"plane:rollout_halted/opened"})
		if inc := ch[0].Incident; inc.Subject != ro.ID || inc.NodeID != "" || inc.Severity != store.SeverityWarning ||
			!strings.Contains(inc.Summary, "halted at node web-1 after 1 misses: preflight failed") {
			f.Fatalf("incident %+v", inc)
		}
		same(f, "still halted", kinds(f.reconcile(3*time.Minute, hooks)), []string{})
		_, err = f.s.RolloutSetState(f.ctx, store.RolloutSetStateParams{ID: ro.ID, From: []store.RolloutState{store.RolloutHalted},
			To: store.RolloutRunning, By: "tok-admin", Action: "resume", Now: f.at(4 * time.Minute)})
		noErr(f, err, "RolloutSetState")
		same(f, "resumed", kinds(f.reconcile(4*time.Minute, hooks)), []string{"plane:rollout_halted/cleared", "plane:rollout_halted/triage"})
	}},
	{"Incident/EndedNodesConditionsEnd", func(f *fx) {
		n := f.node("web-1")
		f.intake(n, 0, nil, f.openCase(1, "unit_health", 0))
		f.reconcile(11*time.Minute, nil)
		if len(f.incidentsOf(n, f.at(0))) != 2 {
			f.Fatal("want a case incident and a silence incident")
		}
		_, err := f.s.NodeLeave(f.ctx, store.NodeEndParams{ID: n.ID, Now: f.at(12 * time.Minute)})
		noErr(f, err, "NodeLeave")
		ch := f.reconcile(13*time.Minute, nil)
		same(f, "node left", kinds(ch), []string{"recipe:unit_health/cleared", "recipe:unit_health/triage",
			"plane:agent_silent/cleared", "plane:agent_silent/triage"})
		same(f, "nothing more", kinds(f.reconcile(30*time.Minute, nil)), []string{})
	}},
	{"Incident/Triage", func(f *fx) {
		n := f.node("web-1")
		f.intake(n, 0, nil, f.openCase(1, "unit_health", 0))
		inc := f.only(n, f.at(0))
		triage := func(d time.Duration, t store.Triage, until time.Time) store.IncidentChange {
			f.Helper()
			ch, err := f.s.IncidentTriage(f.ctx, store.IncidentTriageParams{ID: inc.ID, Triage: t, SnoozedUntil: until, By: "bob", Now: f.at(d)})
			noErr(f, err, "IncidentTriage")
			return ch
		}
		ch := triage(time.Minute, store.TriageSnoozed, f.at(4*time.Hour))
		if ch.Event.Kind != store.EventTriage || ch.Event.Actor != "bob" || !ch.Event.SnoozedUntil.Equal(f.at(4*time.Hour)) ||
			ch.Incident.Triage != store.TriageSnoozed || ch.Incident.NeedsYou || !ch.Incident.TriagedAt.Equal(f.at(time.Minute)) {
			f.Fatalf("snooze %+v", ch)
		}
		needs := func(d time.Duration) int {
			f.Helper()
			res, err := f.s.IncidentList(f.ctx, store.IncidentListParams{NeedsYou: true, Now: f.at(d)})
			noErr(f, err, "IncidentList")
			return len(res.Incidents)
		}
		if needs(time.Hour) != 0 || needs(4*time.Hour) != 1 || f.incident(inc.ID, 4*time.Hour).NeedsYou != true {
			f.Fatal("a snoozed incident needs you exactly when it is due")
		}
		// The same answer again is no change, and no event.
		if ch := triage(2*time.Minute, store.TriageSnoozed, f.at(4*time.Hour)); ch.Event.Seq != 0 {
			f.Fatalf("a repeated snooze wrote %+v", ch.Event)
		}
		triage(3*time.Minute, store.TriageSnoozed, f.at(24*time.Hour))
		triage(4*time.Minute, store.TriageIgnored, time.Time{})
		if needs(48*time.Hour) != 0 {
			f.Fatal("an ignored incident needs you")
		}
		ch = triage(5*time.Minute, store.TriageNew, time.Time{})
		if !ch.Incident.NeedsYou || !ch.Incident.SnoozedUntil.IsZero() {
			f.Fatalf("back to new %+v", ch.Incident)
		}
		same(f, "timeline", f.timeline(inc.ID), []string{"opened", "triage", "triage", "triage", "triage"})
		// The condition is the source's to say: triage never clears it.
		if got := f.incident(inc.ID, 0); got.Condition != store.ConditionOpen {
			f.Fatalf("triage changed the condition: %+v", got)
		}

		bad := []store.IncidentTriageParams{
			{ID: inc.ID, Triage: "fixed", By: "bob"},
			{ID: inc.ID, Triage: store.TriageSnoozed, By: "bob"},
			{ID: inc.ID, Triage: store.TriageSnoozed, SnoozedUntil: f.at(-time.Minute), By: "bob", Now: f.at(0)},
			{ID: inc.ID, Triage: store.TriageResolved, SnoozedUntil: f.at(time.Hour), By: "bob"},
			{ID: inc.ID, Triage: store.TriageResolved},
			{ID: inc.ID, Triage: store.TriageResolved, By: "bob", Reason: "\x00"},
		}
		before := f.incident(inc.ID, 0)
		for i, p := range bad {
			_, err := f.s.IncidentTriage(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad triage %d: %v", i, err)
			}
		}
		same(f, "incident after refusals", f.incident(inc.ID, 0), before)
		_, err := f.s.IncidentTriage(f.ctx, store.IncidentTriageParams{ID: "inc_missing", Triage: store.TriageNew, By: "bob"})
		testkit.WantCode(f, err, errcode.IncidentNotFound)
	}},
	{"Incident/Note", func(f *fx) {
		n := f.node("web-1")
		f.intake(n, 0, nil, f.openCase(1, "unit_health", 0))
		inc := f.only(n, f.at(0))
		ev, err := f.s.IncidentNote(f.ctx, store.IncidentNoteParams{ID: inc.ID, By: "carol", Text: "looking at the unit file", Now: f.at(time.Minute)})
		noErr(f, err, "IncidentNote")
		if ev.Seq != 2 || ev.Kind != store.EventNote || ev.Actor != "carol" || !ev.At.Equal(f.at(time.Minute)) {
			f.Fatalf("note %+v", ev)
		}
		evs, err := f.s.IncidentEventList(f.ctx, store.IncidentEventListParams{ID: inc.ID})
		noErr(f, err, "IncidentEventList")
		same(f, "stored note", evs[1], ev)
		if got := f.incident(inc.ID, 0); got.Triage != store.TriageNew || got.Events != 2 {
			f.Fatalf("a note changed the triage: %+v", got)
		}
		for _, p := range []store.IncidentNoteParams{{ID: inc.ID, By: "carol"}, {ID: inc.ID, Text: "x"},
			{ID: inc.ID, By: "carol", Text: strings.Repeat("x", 4097)}} {
			_, err := f.s.IncidentNote(f.ctx, p)
			testkit.WantCode(f, err, errcode.StoreParamInvalid)
		}
		_, err = f.s.IncidentNote(f.ctx, store.IncidentNoteParams{ID: "inc_missing", By: "carol", Text: "x"})
		testkit.WantCode(f, err, errcode.IncidentNotFound)
		_, err = f.s.IncidentEventList(f.ctx, store.IncidentEventListParams{ID: "inc_missing"})
		testkit.WantCode(f, err, errcode.IncidentNotFound)
		_, err = f.s.IncidentGet(f.ctx, store.IncidentGetParams{ID: "inc_missing"})
		testkit.WantCode(f, err, errcode.IncidentNotFound)
	}},
	{"Incident/List", func(f *fx) {
		a := f.node("a")
		b := f.node("b")
		f.intake(a, 0, nil, f.openCase(1, "unit_health", 0))
		f.intake(a, time.Second, nil, f.openCase(2, "disk_headroom", 0))
		f.intake(b, 2*time.Second, nil, f.openCase(1, "unit_health", 0))
		f.intake(b, 3*time.Second, nil, closed(f.openCase(1, "unit_health", 0), f.at(3*time.Second)))
		list := func(p store.IncidentListParams) ([]string, string) {
			f.Helper()
			p.Now = f.at(time.Minute)
			res, err := f.s.IncidentList(f.ctx, p)
			noErr(f, err, "IncidentList")
			var out []string
			for _, i := range res.Incidents {
				out = append(out, i.NodeName+"/"+i.Source)
			}
			return out, res.NextCursor
		}
		all, _ := list(store.IncidentListParams{})
		same(f, "all, newest first", all, []string{"b/recipe:unit_health", "a/recipe:disk_headroom", "a/recipe:unit_health"})
		needs, _ := list(store.IncidentListParams{NeedsYou: true})
		same(f, "needs you", needs, []string{"a/recipe:disk_headroom", "a/recipe:unit_health"})
		ofB, _ := list(store.IncidentListParams{NodeID: b.ID})
		same(f, "node b", ofB, []string{"b/recipe:unit_health"})
		cleared, _ := list(store.IncidentListParams{Condition: store.ConditionCleared})
		same(f, "cleared", cleared, []string{"b/recipe:unit_health"})
		page, cursor := list(store.IncidentListParams{Limit: 2})
		same(f, "page 1", page, all[:2])
		page, cursor = list(store.IncidentListParams{Limit: 2, Cursor: cursor})
		same(f, "page 2", page, all[2:])
		if cursor != "" {
			f.Fatalf("cursor after the last page %q", cursor)
		}
		_, err := f.s.IncidentList(f.ctx, store.IncidentListParams{Condition: "gone"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		counts, err := f.s.IncidentCount(f.ctx, store.IncidentCountParams{})
		noErr(f, err, "IncidentCount")
		var got []string
		for _, c := range counts {
			got = append(got, fmt.Sprintf("%s/%s=%d", c.Condition, c.Triage, c.Count))
		}
		slices.Sort(got)
		same(f, "counts", got, []string{"cleared/resolved=1", "open/new=2"})
	}},
	{"Concurrent/ReconcileAcrossReplicas", func(f *fx) {
		nodes := make([]store.Node, 5)
		for i := range nodes {
			nodes[i] = f.node(string(rune('a' + i)))
		}
		stores := []store.Store{f.s, f.env.Peer(f)}
		// Every replica reconciles at once, over and over, while the fleet goes silent, comes back
		// and goes silent again: each step happens once.
		step := func(d time.Duration) {
			f.Helper()
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					if _, err := stores[i%2].IncidentReconcile(f.ctx, store.IncidentReconcileParams{Now: f.at(d), Notify: hooks}); err != nil {
						f.Errorf("IncidentReconcile: %v", err)
					}
				})
			}
			wg.Wait()
		}
		step(11 * time.Minute)
		for _, n := range nodes {
			f.seen(n, 12*time.Minute, "")
		}
		step(12 * time.Minute)
		step(23 * time.Minute)
		for _, n := range nodes {
			inc := f.only(n, f.at(23*time.Minute))
			same(f, "timeline of "+n.Name, f.timeline(inc.ID), []string{"opened", "cleared", "triage", "reopened"})
			ns := f.notificationsOf(inc.ID)
			if len(ns) != 6 { // opened, cleared and reopened, to each of two webhooks
				f.Fatalf("%s has %d notifications, want 6", n.Name, len(ns))
			}
		}
	}},
	{"Concurrent/CaseIntakeAcrossReplicas", func(f *fx) {
		n := f.node("web-1")
		stores := []store.Store{f.s, f.env.Peer(f)}
		// A claim sent again while the first is still being handled, on another replica: the case,
		// its notes and its incident are each recorded once.
		c := withNotes(f.openCase(1, "unit_health", 0), f.at(0), 1, 2)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if _, err := stores[i%2].CaseIntake(f.ctx, store.CaseIntakeParams{NodeID: n.ID, Cases: []store.CaseReport{c},
					Now: f.at(time.Minute), Notify: hooks}); err != nil {
					f.Errorf("CaseIntake: %v", err)
				}
			})
		}
		wg.Wait()
		inc := f.only(n, f.at(time.Minute))
		same(f, "timeline", f.timeline(inc.ID), []string{"opened"})
		if ns := f.notificationsOf(inc.ID); len(ns) != 2 {
			f.Fatalf("%d notifications, want 2", len(ns))
		}
		if got := f.getCase(n, 1); len(got.Notes) != 2 {
			f.Fatalf("notes %+v", got.Notes)
		}
	}},
	{"Incident/JSONShape", func(f *fx) {
		n := f.node("web-1")
		f.intake(n, 0, nil, f.openCase(1, "unit_health", 0))
		b, err := json.Marshal(f.only(n, f.at(0)))
		noErr(f, err, "marshal")
		var m map[string]any
		noErr(f, json.Unmarshal(b, &m), "unmarshal")
		for _, k := range []string{"id", "node_id", "node_name", "source", "severity", "condition", "triage", "summary", "needs_you", "opened_at"} {
			if _, ok := m[k]; !ok {
				f.Fatalf("incident JSON lacks %s: %s", k, b)
			}
		}
	}},
}
