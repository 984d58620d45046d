package storetest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var auditTests = []test{
	{"Audit/IntentThenOutcome", func(f *fx) {
		start := func(via, actor, op, target string, at time.Duration) store.AuditEvent {
			f.Helper()
			e, err := f.s.AuditEventStart(f.ctx, store.AuditEventStartParams{Via: via, ActorID: "tok_" + actor, Actor: actor,
				Address: "192.0.2.7", Operation: op, Target: target, Now: f.at(at)})
			noErr(f, err, "AuditEventStart")
			return e
		}
		finish := func(e store.AuditEvent, status int, code string) store.AuditEvent {
			f.Helper()
			done, err := f.s.AuditEventFinish(f.ctx, store.AuditEventFinishParams{ID: e.ID, Status: status, Code: code, Duration: 2 * time.Millisecond})
			noErr(f, err, "AuditEventFinish")
			return done
		}
		e1 := start(store.AuditViaAPI, "alice", "JobsCreate", "", 0)
		if e1.Code != store.CodePending || e1.Status != 0 || !strings.HasPrefix(e1.ID, "audit_") {
			f.Fatalf("intent %+v", e1)
		}
		// The intent is in the store before any outcome: a plane that stops now leaves it pending.
		pending, err := f.s.AuditEventList(f.ctx, store.AuditEventListParams{Outcome: store.CodePending})
		noErr(f, err, "AuditEventList")
		same(f, "pending", pending.Events, []store.AuditEvent{e1})

		d1, err := f.s.AuditEventFinish(f.ctx, store.AuditEventFinishParams{ID: e1.ID, Status: 201, Code: store.CodeOK, Target: "job_1",
			Actor: "mallory", Duration: 3 * time.Millisecond})
		noErr(f, err, "AuditEventFinish")
		if d1.Target != "job_1" || d1.Actor != "alice" || d1.Status != 201 || d1.DurationMS != 3 {
			f.Fatalf("a finish fills only what the intent lacked: %+v", d1)
		}
		_, err = f.s.AuditEventFinish(f.ctx, store.AuditEventFinishParams{ID: e1.ID, Status: 500, Code: errcode.InternalError})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)

		e2 := start(store.AuditViaUI, "bob", "TokensRevoke", "tok_9", time.Second)
		d2 := finish(e2, 403, errcode.AuthForbidden)
		e3 := start(store.AuditViaAPI, "alice", "JobsCancel", "job_1", 2*time.Second)
		d3 := finish(e3, 200, store.CodeOK)
		signin, err := f.s.AuditEventStart(f.ctx, store.AuditEventStartParams{Via: store.AuditViaUI, Address: "192.0.2.8",
			Operation: "UISignIn", Now: f.at(3 * time.Second)})
		noErr(f, err, "AuditEventStart")
		d4, err := f.s.AuditEventFinish(f.ctx, store.AuditEventFinishParams{ID: signin.ID, Status: 303, Code: store.CodeOK,
			ActorID: "tok_bob", Actor: "bob"})
		noErr(f, err, "AuditEventFinish")
		if d4.Actor != "bob" || d4.ActorID != "tok_bob" {
			f.Fatalf("a sign-in learns its actor: %+v", d4)
		}

		list := func(p store.AuditEventListParams) []store.AuditEvent {
			f.Helper()
			res, err := f.s.AuditEventList(f.ctx, p)
			noErr(f, err, "AuditEventList")
			return res.Events
		}
		same(f, "newest first", list(store.AuditEventListParams{}), []store.AuditEvent{d4, d3, d2, d1})
		same(f, "by actor name", list(store.AuditEventListParams{Actor: "alice"}), []store.AuditEvent{d3, d1})
		same(f, "by actor id", list(store.AuditEventListParams{Actor: "tok_bob"}), []store.AuditEvent{d4, d2})
		same(f, "by operation", list(store.AuditEventListParams{Operation: "JobsCancel"}), []store.AuditEvent{d3})
		same(f, "by target", list(store.AuditEventListParams{Target: "job_1"}), []store.AuditEvent{d3, d1})
		same(f, "failed", list(store.AuditEventListParams{Outcome: store.AuditOutcomeFailed}), []store.AuditEvent{d2})
		same(f, "by code", list(store.AuditEventListParams{Outcome: errcode.AuthForbidden}), []store.AuditEvent{d2})
		same(f, "since, until", list(store.AuditEventListParams{Since: f.at(time.Second), Until: f.at(3 * time.Second)}),
			[]store.AuditEvent{d3, d2})

		page, err := f.s.AuditEventList(f.ctx, store.AuditEventListParams{Limit: 3})
		noErr(f, err, "AuditEventList")
		if len(page.Events) != 3 || page.NextCursor != d2.ID {
			f.Fatalf("first page %+v", page)
		}
		rest, err := f.s.AuditEventList(f.ctx, store.AuditEventListParams{Limit: 3, Cursor: page.NextCursor})
		noErr(f, err, "AuditEventList")
		if len(rest.Events) != 1 || rest.Events[0].ID != d1.ID || rest.NextCursor != "" {
			f.Fatalf("second page %+v", rest)
		}
	}},
	{"Audit/InvalidRefused", func(f *fx) {
		good := store.AuditEventStartParams{Via: store.AuditViaAPI, Actor: "alice", Operation: "JobsCreate"}
		edits := []func(*store.AuditEventStartParams){
			func(p *store.AuditEventStartParams) { p.Via = "shell" },
			func(p *store.AuditEventStartParams) { p.Operation = "" },
			func(p *store.AuditEventStartParams) { p.Target = strings.Repeat("t", 10000) },
			func(p *store.AuditEventStartParams) { p.Actor = strings.Repeat("a", 10000) },
		}
		for i, edit := range edits {
			p := good
			edit(&p)
			_, err := f.s.AuditEventStart(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad event %d: %v", i, err)
			}
		}
		e, err := f.s.AuditEventStart(f.ctx, good)
		noErr(f, err, "AuditEventStart")
		for i, p := range []store.AuditEventFinishParams{
			{ID: e.ID, Status: 200, Code: store.CodePending},
			{ID: e.ID, Status: 0, Code: store.CodeOK},
			{ID: e.ID, Status: 200, Code: store.CodeOK, Duration: -time.Second},
			{ID: "audit_missing", Status: 200, Code: store.CodeOK},
		} {
			_, err := f.s.AuditEventFinish(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad finish %d: %v", i, err)
			}
		}
		_, err = f.s.AuditEventList(f.ctx, store.AuditEventListParams{Since: f.at(time.Second), Until: f.at(0)})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
		res, err := f.s.AuditEventList(f.ctx, store.AuditEventListParams{})
		noErr(f, err, "AuditEventList")
		if len(res.Events) != 1 || res.Events[0].Code != store.CodePending {
			f.Fatalf("refused finishes changed the event: %+v", res.Events)
		}
	}},
}

var pruneTests = []test{
	{"Audit/Prune", func(f *fx) {
		for i := range 3 {
			_, err := f.s.AuditEventStart(f.ctx, store.AuditEventStartParams{Via: store.AuditViaAPI, Operation: "JobsCreate", Now: f.at(time.Duration(i) * time.Hour)})
			noErr(f, err, "AuditEventStart")
			_, err = f.s.DriverCallAdd(f.ctx, store.DriverCallAddParams{Actor: "alice", Driver: "dns-memory", Operation: store.OpDNSListZones,
				Code: store.CodeOK, Now: f.at(time.Duration(i) * time.Hour)})
			noErr(f, err, "DriverCallAdd")
		}
		n, err := f.s.AuditEventPrune(f.ctx, store.PruneParams{Before: f.at(90 * time.Minute), Limit: 1})
		noErr(f, err, "AuditEventPrune")
		if n != 1 {
			f.Fatalf("pruned %d, want 1 (the limit)", n)
		}
		n, err = f.s.AuditEventPrune(f.ctx, store.PruneParams{Before: f.at(90 * time.Minute)})
		noErr(f, err, "AuditEventPrune")
		left, err := f.s.AuditEventList(f.ctx, store.AuditEventListParams{})
		noErr(f, err, "AuditEventList")
		if n != 1 || len(left.Events) != 1 || !left.Events[0].At.Equal(f.at(2*time.Hour)) {
			f.Fatalf("pruned %d, left %+v", n, left.Events)
		}
		n, err = f.s.DriverCallPrune(f.ctx, store.PruneParams{Before: f.at(90 * time.Minute)})
		noErr(f, err, "DriverCallPrune")
		calls, err := f.s.DriverCallList(f.ctx, store.DriverCallListParams{})
		noErr(f, err, "DriverCallList")
		if n != 2 || len(calls.Calls) != 1 {
			f.Fatalf("pruned %d driver calls, left %+v", n, calls.Calls)
		}
		_, err = f.s.AuditEventPrune(f.ctx, store.PruneParams{})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Retention/Jobs", func(f *fx) {
		n := f.node("web-1", "disk_usage", "backup")
		backedUp := Completed(f, f.s, n.ID, "backup", json.RawMessage(`{}`), f.at(0))
		_, err := f.s.BackupJobCreate(f.ctx, store.BackupJobCreateParams{Job: store.BackupJob{JobID: backedUp.ID, NodeID: n.ID,
			Purpose: store.BackupPurposeRun, Target: "b2", Objects: 1}, Now: f.at(0)})
		noErr(f, err, "BackupJobCreate")
		old := Completed(f, f.s, n.ID, "disk_usage", json.RawMessage(`{"used":1}`), f.at(0))
		f.batch(f.batchParams("disk_usage", n))
		inBatch := f.finishAs(n, time.Minute, store.JobCompleted, "")
		recent := Completed(f, f.s, n.ID, "disk_usage", json.RawMessage(`{"used":2}`), f.at(3*time.Hour))
		queued, err := f.s.JobCreate(f.ctx, store.JobCreateParams{NodeID: n.ID, Word: "disk_usage", Class: "look",
			Params: json.RawMessage(`{}`), CreatedBy: "test", Now: f.at(0)})
		noErr(f, err, "JobCreate")
		pruned, err := f.s.JobPrune(f.ctx, store.PruneParams{Before: f.at(2 * time.Hour)})
		noErr(f, err, "JobPrune")
		if pruned != 1 {
			f.Fatalf("pruned %d jobs, want 1 (the old finished one)", pruned)
		}
		_, err = f.s.JobGet(f.ctx, store.JobGetParams{ID: old.ID})
		testkit.WantCode(f, err, errcode.JobNotFound)
		for _, id := range []string{backedUp.ID, inBatch.ID, recent.ID, queued.ID} {
			_, err = f.s.JobGet(f.ctx, store.JobGetParams{ID: id})
			noErr(f, err, "JobGet of a job retention keeps")
		}
		_, err = f.s.JobPrune(f.ctx, store.PruneParams{Before: f.at(time.Hour), Limit: -1})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Retention/Batches", func(f *fx) {
		n, m := f.node("web-1", "disk_usage"), f.node("web-2", "disk_usage")
		ended := f.batch(f.batchParams("disk_usage", n))
		f.finishAs(n, time.Minute, store.JobCompleted, `{"used":1}`)
		open := f.batch(f.batchParams("disk_usage", m)) // its job never ends
		late := f.batch(f.batchParams("disk_usage", n))
		f.finishAs(n, 3*time.Hour, store.JobCompleted, `{"used":2}`) // ended after the age
		pruned, err := f.s.BatchPrune(f.ctx, store.PruneParams{Before: f.at(2 * time.Hour)})
		noErr(f, err, "BatchPrune")
		if pruned != 1 {
			f.Fatalf("pruned %d batches, want 1 (the one whose jobs all ended before the age)", pruned)
		}
		_, err = f.s.BatchGet(f.ctx, store.BatchGetParams{ID: ended.ID})
		testkit.WantCode(f, err, errcode.JobBatchNotFound)
		for _, b := range []store.Batch{open, late} {
			if got := f.getBatch(b.ID); got.Jobs != 1 || len(f.batchJobs(b.ID, "", "")) != 1 {
				f.Fatalf("a batch retention keeps lost its job: %+v", got)
			}
		}
		jobs, err := f.s.JobList(f.ctx, store.JobListParams{NodeID: n.ID})
		noErr(f, err, "JobList")
		if len(jobs.Jobs) != 1 {
			f.Fatalf("web-1 keeps %d jobs, want the late batch's one", len(jobs.Jobs))
		}
		_, err = f.s.BatchPrune(f.ctx, store.PruneParams{Before: f.at(time.Hour), Limit: -1})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"Retention/Incidents", func(f *fx) {
		settled, open := f.node("web-1"), f.node("web-2")
		same(f, "silent", kinds(f.reconcile(11*time.Minute, hooks)), []string{"plane:agent_silent/opened", "plane:agent_silent/opened"})
		inc := f.only(settled, f.at(11*time.Minute))
		_, err := f.s.IncidentNote(f.ctx, store.IncidentNoteParams{ID: inc.ID, By: "carol", Text: "rebooting", Now: f.at(12 * time.Minute)})
		noErr(f, err, "IncidentNote")
		f.seen(settled, 20*time.Minute, "")
		f.reconcile(20*time.Minute, hooks)
		if got := f.incident(inc.ID, 20*time.Minute); got.Condition != store.ConditionCleared || got.Triage != store.TriageResolved {
			f.Fatalf("incident not settled: %+v", got)
		}
		pruned, err := f.s.IncidentPrune(f.ctx, store.PruneParams{Before: f.at(10 * time.Hour)})
		noErr(f, err, "IncidentPrune")
		if pruned != 1 {
			f.Fatalf("pruned %d incidents, want 1 (the settled one)", pruned)
		}
		_, err = f.s.IncidentGet(f.ctx, store.IncidentGetParams{ID: inc.ID, Now: f.at(10 * time.Hour)})
		testkit.WantCode(f, err, errcode.IncidentNotFound)
		if got := f.only(open, f.at(10*time.Hour)); got.Condition != store.ConditionOpen || len(f.timeline(got.ID)) == 0 {
			f.Fatalf("the open incident was touched: %+v", got)
		}
	}},
}
