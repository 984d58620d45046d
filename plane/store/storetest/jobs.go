package storetest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var jobTests = []test{
	{"Job/Create", func(f *fx) {
		n := f.node("web-1", "disk_usage", "host_report")
		p := f.jobParams(n, "disk_usage")
		p.Params = json.RawMessage(`{"path": "/var",  "depth":2}`)
		j, err := f.s.JobCreate(f.ctx, p)
		noErr(f, err, "JobCreate")
		w, _ := n.Word("disk_usage")
		if !strings.HasPrefix(j.ID, "job_") || j.NodeID != n.ID || j.Word != "disk_usage" || j.WordVersion != w.Version ||
			j.WordDigest != w.Digest || j.Class != string(manifest.ClassLook) || j.State != store.JobQueued || j.Budget != store.DefaultJobBudget ||
			j.CreatedBy != "operator" || !j.CreatedAt.Equal(p.Now) || !j.ClaimedAt.IsZero() || !j.FinishedAt.IsZero() {
			f.Fatalf("created %+v", j)
		}
		got := f.getJob(j.ID)
		// Params are kept byte for byte: they are the caller's document.
		if string(got.Params) != string(p.Params) {
			f.Fatalf("params stored as %s", got.Params)
		}
		same(f, "job as stored", got, j)
		_, err = f.s.JobGet(f.ctx, store.JobGetParams{ID: "job_missing"})
		testkit.WantCode(f, err, errcode.JobNotFound)
	}},
	{"Job/CreateRefused", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		w, _ := n.Word("disk_usage")
		cases := []struct {
			name string
			edit func(*store.JobCreateParams)
			code string
		}{
			{"unknown node", func(p *store.JobCreateParams) { p.NodeID = "node_missing" }, errcode.NodeNotFound},
			{"unreported word", func(p *store.JobCreateParams) { p.Word = "reboot" }, errcode.JobWordUnavailable},
			{"other digest", func(p *store.JobCreateParams) { p.WordDigest = digest([]byte("older")) }, errcode.JobWordUnavailable},
			{"params not JSON", func(p *store.JobCreateParams) { p.Params = json.RawMessage(`{"a":`) }, errcode.StoreParamInvalid},
			{"params not an object", func(p *store.JobCreateParams) { p.Params = json.RawMessage(`[1]`) }, errcode.StoreParamInvalid},
			{"params null", func(p *store.JobCreateParams) { p.Params = json.RawMessage(`null`) }, errcode.StoreParamInvalid},
			{"params not UTF-8", func(p *store.JobCreateParams) { p.Params = json.RawMessage("{\"a\": \"\xff\"}") }, errcode.StoreParamInvalid},
			{"unknown class", func(p *store.JobCreateParams) { p.Class = "harmless" }, errcode.StoreParamInvalid},
			{"no creator", func(p *store.JobCreateParams) { p.CreatedBy = "" }, errcode.StoreParamInvalid},
			{"budget too long", func(p *store.JobCreateParams) { p.Budget = store.MaxJobBudget + time.Second }, errcode.StoreParamInvalid},
			{"negative budget", func(p *store.JobCreateParams) { p.Budget = -time.Second }, errcode.StoreParamInvalid},
		}
		for _, c := range cases {
			p := f.jobParams(n, "disk_usage")
			c.edit(&p)
			_, err := f.s.JobCreate(f.ctx, p)
			if !errcode.Has(err, c.code) {
				f.Fatalf("%s: got %v, want %s", c.name, err, c.code)
			}
		}
		list, err := f.s.JobList(f.ctx, store.JobListParams{})
		noErr(f, err, "JobList")
		if len(list.Jobs) != 0 {
			f.Fatalf("refused jobs were stored: %+v", list.Jobs)
		}
		// The right digest is accepted.
		p := f.jobParams(n, "disk_usage")
		p.WordDigest = w.Digest
		_, err = f.s.JobCreate(f.ctx, p)
		noErr(f, err, "JobCreate with the reported digest")
	}},
	{"Job/ClaimOldestOneAtATime", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		other := f.node("web-2", "disk_usage")
		f.noClaim(n, f.at(0))
		first := f.job(n, "disk_usage")
		second := f.job(n, "disk_usage")
		foreign := f.job(other, "disk_usage")
		at := f.at(time.Second)
		got := f.claim(n, at)
		if got.ID != first.ID || got.State != store.JobRunning || !got.ClaimedAt.Equal(at) ||
			!got.DeadlineAt.Equal(at.Add(store.DefaultJobBudget)) {
			f.Fatalf("claimed %+v, want %s running", got, first.ID)
		}
		same(f, "claimed job as stored", f.getJob(first.ID), got)
		// While it runs, nothing else is handed to this node, but other nodes are served.
		f.noClaim(n, f.at(2*time.Second))
		same(f, "second job", f.getJob(second.ID), second)
		if f.claim(other, at).ID != foreign.ID {
			f.Fatal("the other node did not get its job")
		}
		_, err := f.s.JobFinish(f.ctx, store.JobFinishParams{ID: first.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(3 * time.Second)})
		noErr(f, err, "JobFinish")
		if f.claim(n, f.at(4*time.Second)).ID != second.ID {
			f.Fatal("the second job was not next")
		}
		_, err = f.s.JobClaim(f.ctx, store.JobClaimParams{NodeID: "node_missing"})
		testkit.WantCode(f, err, errcode.NodeNotFound)
	}},
	{"Job/Budget", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		p := f.jobParams(n, "disk_usage")
		p.Budget = 90 * time.Second
		j, err := f.s.JobCreate(f.ctx, p)
		noErr(f, err, "JobCreate")
		if j.Budget != 90*time.Second {
			f.Fatalf("budget %s", j.Budget)
		}
		at := f.at(time.Minute)
		if got := f.claim(n, at); !got.DeadlineAt.Equal(at.Add(90 * time.Second)) {
			f.Fatalf("deadline %s, want %s", got.DeadlineAt, at.Add(90*time.Second))
		}
	}},
	{"Job/Finish", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		j := f.job(n, "disk_usage")
		f.claim(n, f.at(time.Second))
		at := f.at(5 * time.Second)
		p := store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted,
			Output: json.RawMessage(`{"used":  42}`), Transcript: "line 1\nline 2\n",
			Audit: json.RawMessage(`[{"cap":"sys.disk","allowed":true}]`), Duration: 1500 * time.Millisecond, Now: at}
		done, err := f.s.JobFinish(f.ctx, p)
		noErr(f, err, "JobFinish")
		if done.State != store.JobCompleted || !done.FinishedAt.Equal(at) || done.DurationMS != 1500 ||
			string(done.Output) != string(p.Output) || string(done.Audit) != string(p.Audit) || done.Transcript != p.Transcript {
			f.Fatalf("finished %+v", done)
		}
		same(f, "finished job as stored", f.getJob(j.ID), done)
		// A second result for it is dropped.
		_, err = f.s.JobFinish(f.ctx, p)
		testkit.WantCode(f, err, errcode.JobNotRunning)
		same(f, "job after a second result", f.getJob(j.ID), done)
		if f.getNode(n.ID).Refusals != 0 {
			f.Fatal("a completed job counted a refusal")
		}
	}},
	{"Job/FinishRefused", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		other := f.node("web-2", "disk_usage")
		queued := f.job(n, "disk_usage")
		// Not yet running.
		_, err := f.s.JobFinish(f.ctx, store.JobFinishParams{ID: queued.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(0)})
		testkit.WantCode(f, err, errcode.JobNotRunning)
		f.claim(n, f.at(time.Second))
		// Another node cannot report it, nor learn that it exists.
		_, err = f.s.JobFinish(f.ctx, store.JobFinishParams{ID: queued.ID, NodeID: other.ID, Outcome: store.JobCompleted, Now: f.at(0)})
		testkit.WantCode(f, err, errcode.JobNotFound)
		_, err = f.s.JobFinish(f.ctx, store.JobFinishParams{ID: "job_missing", NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(0)})
		testkit.WantCode(f, err, errcode.JobNotFound)
		bad := []store.JobFinishParams{
			{ID: queued.ID, NodeID: n.ID, Outcome: store.JobLost},
			{ID: queued.ID, NodeID: n.ID, Outcome: store.JobQueued},
			{ID: queued.ID, NodeID: n.ID, Outcome: store.JobCompleted, Output: json.RawMessage(`{`)},
			{ID: queued.ID, NodeID: n.ID, Outcome: store.JobCompleted, Audit: json.RawMessage(`nope`)},
			{ID: queued.ID, NodeID: n.ID, Outcome: store.JobCompleted, Duration: -time.Second},
			{ID: queued.ID, NodeID: n.ID, Outcome: store.JobFailed, Message: strings.Repeat("m", 5000)},
		}
		running := f.getJob(queued.ID)
		for i, p := range bad {
			_, err := f.s.JobFinish(f.ctx, p)
			if !errcode.Has(err, errcode.StoreParamInvalid) {
				f.Fatalf("bad result %d: %v", i, err)
			}
		}
		same(f, "job after refused results", f.getJob(queued.ID), running)
	}},
	{"Job/RefusalCounted", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		for i := range 3 {
			j := f.job(n, "disk_usage")
			f.claim(n, f.at(time.Duration(i)*time.Second))
			outcome := store.JobRefused
			if i == 1 {
				outcome = store.JobFailed
			}
			got, err := f.s.JobFinish(f.ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: outcome,
				Code: errcode.PolicyRefused, Message: "class change is refused here", Now: f.at(time.Duration(i) * time.Second)})
			noErr(f, err, "JobFinish")
			if got.State != outcome || got.OutcomeCode != errcode.PolicyRefused {
				f.Fatalf("finished %+v", got)
			}
		}
		if r := f.getNode(n.ID).Refusals; r != 2 {
			f.Fatalf("refusals = %d, want 2", r)
		}
	}},
	{"Job/LoseRunning", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		j := f.job(n, "disk_usage")
		next := f.job(n, "disk_usage")
		f.claim(n, f.at(time.Second))
		at := f.at(time.Minute)
		lost, err := f.s.JobLoseRunning(f.ctx, store.JobLoseRunningParams{NodeID: n.ID, Now: at})
		noErr(f, err, "JobLoseRunning")
		if len(lost) != 1 || lost[0].ID != j.ID || lost[0].State != store.JobLost || lost[0].OutcomeCode != errcode.JobLost ||
			!lost[0].FinishedAt.Equal(at) {
			f.Fatalf("lost %+v", lost)
		}
		same(f, "lost job as stored", f.getJob(j.ID), lost[0])
		// Its late result is dropped, and it is never handed out again: the next claim gets the next job.
		_, err = f.s.JobFinish(f.ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: at})
		testkit.WantCode(f, err, errcode.JobNotRunning)
		if f.claim(n, at).ID != next.ID {
			f.Fatal("claim after a lost job did not get the next job")
		}
		lost, err = f.s.JobLoseRunning(f.ctx, store.JobLoseRunningParams{NodeID: n.ID, Now: at})
		noErr(f, err, "JobLoseRunning")
		if len(lost) != 1 || lost[0].ID != next.ID {
			f.Fatalf("lost %+v", lost)
		}
		f.noClaim(n, at)
		lost, err = f.s.JobLoseRunning(f.ctx, store.JobLoseRunningParams{NodeID: n.ID, Now: at})
		noErr(f, err, "JobLoseRunning")
		if len(lost) != 0 {
			f.Fatalf("lost %+v with nothing running", lost)
		}
	}},
	{"Job/Expire", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		m := f.node("web-2", "disk_usage")
		p := f.jobParams(n, "disk_usage")
		p.Budget = time.Minute
		short, err := f.s.JobCreate(f.ctx, p)
		noErr(f, err, "JobCreate")
		long := f.job(m, "disk_usage")
		f.claim(n, f.at(0))
		f.claim(m, f.at(0))
		expired, err := f.s.JobExpire(f.ctx, store.JobExpireParams{Now: f.at(59 * time.Second)})
		noErr(f, err, "JobExpire")
		if len(expired) != 0 {
			f.Fatalf("expired early: %+v", expired)
		}
		expired, err = f.s.JobExpire(f.ctx, store.JobExpireParams{Now: f.at(time.Minute)})
		noErr(f, err, "JobExpire")
		if len(expired) != 1 || expired[0].ID != short.ID || expired[0].State != store.JobLost {
			f.Fatalf("expired %+v", expired)
		}
		if got := f.getJob(long.ID); got.State != store.JobRunning {
			f.Fatalf("job within its budget is %s", got.State)
		}
		f.noClaim(n, f.at(time.Minute))
		_, err = f.s.JobFinish(f.ctx, store.JobFinishParams{ID: short.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.JobNotRunning)
	}},
	{"Job/Cancel", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		j := f.job(n, "disk_usage")
		running := f.job(n, "disk_usage")
		got, err := f.s.JobCancel(f.ctx, store.JobCancelParams{ID: j.ID, By: "alice", Now: f.at(time.Second)})
		noErr(f, err, "JobCancel")
		if got.State != store.JobCancelled || got.OutcomeCode != errcode.JobCancelled || got.FinishedBy != "alice" {
			f.Fatalf("cancelled %+v", got)
		}
		same(f, "cancelled job as stored", f.getJob(j.ID), got)
		_, err = f.s.JobCancel(f.ctx, store.JobCancelParams{ID: j.ID, Now: f.at(time.Second)})
		testkit.WantCode(f, err, errcode.JobNotQueued)
		// The cancelled job is skipped by claims; a running one cannot be cancelled.
		claimed := f.claim(n, f.at(2*time.Second))
		if claimed.ID != running.ID {
			f.Fatalf("claimed %s, want %s", claimed.ID, running.ID)
		}
		_, err = f.s.JobCancel(f.ctx, store.JobCancelParams{ID: claimed.ID, Now: f.at(3 * time.Second)})
		testkit.WantCode(f, err, errcode.JobNotQueued)
		same(f, "running job", f.getJob(claimed.ID), claimed)
		_, err = f.s.JobCancel(f.ctx, store.JobCancelParams{ID: "job_missing"})
		testkit.WantCode(f, err, errcode.JobNotFound)
	}},
	{"Job/MarkFailed", func(f *fx) {
		n := f.node("web-1", "disk_usage")
		running := f.job(n, "disk_usage")
		queued := f.job(n, "disk_usage")
		f.claim(n, f.at(time.Second))
		at := f.at(time.Minute)
		got, err := f.s.JobMarkFailed(f.ctx, store.JobMarkFailedParams{ID: running.ID, By: "alice", Message: "node rebuilt", Now: at})
		noErr(f, err, "JobMarkFailed running")
		if got.State != store.JobFailed || got.OutcomeCode != errcode.JobMarkedFailed || got.OutcomeMessage != "node rebuilt" ||
			got.FinishedBy != "alice" || !got.FinishedAt.Equal(at) {
			f.Fatalf("marked %+v", got)
		}
		_, err = f.s.JobFinish(f.ctx, store.JobFinishParams{ID: running.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: at})
		testkit.WantCode(f, err, errcode.JobNotRunning)
		got, err = f.s.JobMarkFailed(f.ctx, store.JobMarkFailedParams{ID: queued.ID, By: "alice", Now: at})
		noErr(f, err, "JobMarkFailed queued")
		if got.State != store.JobFailed {
			f.Fatalf("marked %+v", got)
		}
		_, err = f.s.JobMarkFailed(f.ctx, store.JobMarkFailedParams{ID: queued.ID, Now: at})
		testkit.WantCode(f, err, errcode.JobFinished)
		same(f, "finished job", f.getJob(queued.ID), got)
		f.noClaim(n, at)
		_, err = f.s.JobMarkFailed(f.ctx, store.JobMarkFailedParams{ID: "job_missing"})
		testkit.WantCode(f, err, errcode.JobNotFound)
	}},
	{"Job/List", func(f *fx) {
		a := f.node("a", "w")
		b := f.node("b", "w")
		var aJobs, bJobs []string
		for range 3 {
			aJobs = append(aJobs, f.job(a, "w").ID)
			bJobs = append(bJobs, f.job(b, "w").ID)
		}
		done := f.claim(a, f.at(time.Second))
		_, err := f.s.JobFinish(f.ctx, store.JobFinishParams{ID: done.ID, NodeID: a.ID, Outcome: store.JobCompleted,
			Output: json.RawMessage(`{"big":true}`), Transcript: "t", Now: f.at(time.Second)})
		noErr(f, err, "JobFinish")
		list := func(p store.JobListParams) ([]string, string) {
			f.Helper()
			res, err := f.s.JobList(f.ctx, p)
			noErr(f, err, "JobList")
			var out []string
			for _, j := range res.Jobs {
				if j.Output != nil || j.Transcript != "" || j.Audit != nil {
					f.Fatalf("JobList returned output, transcript or audit: %+v", j)
				}
				if len(j.Params) == 0 {
					f.Fatalf("JobList dropped params: %+v", j)
				}
				out = append(out, j.ID)
			}
			return out, res.NextCursor
		}
		rev := func(ids ...string) []string {
			out := make([]string, len(ids))
			for i, id := range ids {
				out[len(ids)-1-i] = id
			}
			return out
		}
		got, _ := list(store.JobListParams{NodeID: a.ID})
		same(f, "node a, newest first", got, rev(aJobs...))
		got, _ = list(store.JobListParams{State: store.JobCompleted})
		same(f, "completed", got, []string{done.ID})
		got, _ = list(store.JobListParams{NodeID: b.ID, State: store.JobQueued})
		same(f, "b queued", got, rev(bJobs...))
		var all []string
		cursor := ""
		for {
			var page []string
			page, cursor = list(store.JobListParams{Limit: 4, Cursor: cursor})
			all = append(all, page...)
			if cursor == "" {
				break
			}
		}
		if len(all) != 6 || all[0] != bJobs[2] || all[5] != aJobs[0] {
			f.Fatalf("paged %v", all)
		}
		_, err = f.s.JobList(f.ctx, store.JobListParams{State: "stuck"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
}
