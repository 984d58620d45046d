package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// batchParams is a batch of word on nodes, unbounded and without a budget.
func (f *fx) batchParams(word string, nodes ...store.Node) store.BatchCreateParams {
	p := store.BatchCreateParams{Word: word, Selector: "role=web", Class: "look", Params: json.RawMessage(`{"path":"/"}`),
		ErrorBudget: store.NoErrorBudget, CreatedBy: "operator", Now: f.at(0)}
	for _, n := range nodes {
		p.Targets = append(p.Targets, store.BatchTarget{NodeID: n.ID})
	}
	return p
}

func (f *fx) batch(p store.BatchCreateParams) store.Batch {
	f.Helper()
	b, err := f.s.BatchCreate(f.ctx, p)
	noErr(f, err, "BatchCreate")
	return b
}

func (f *fx) getBatch(id string) store.Batch {
	f.Helper()
	b, err := f.s.BatchGet(f.ctx, store.BatchGetParams{ID: id})
	noErr(f, err, "BatchGet")
	return b
}

// batchJobs is every job of a batch in state ("" for all), paged 2 at a time to exercise the cursor.
func (f *fx) batchJobs(id, state, like string) []store.BatchJob {
	f.Helper()
	var out []store.BatchJob
	cursor := ""
	for {
		res, err := f.s.BatchJobList(f.ctx, store.BatchJobListParams{ID: id, State: state, Like: like, Limit: 2, Cursor: cursor})
		noErr(f, err, "BatchJobList")
		out = append(out, res.Jobs...)
		if cursor = res.NextCursor; cursor == "" {
			return out
		}
	}
}

// finishAs claims n's job and finishes it with outcome and output.
func (f *fx) finishAs(n store.Node, d time.Duration, outcome store.JobState, output string) store.Job {
	f.Helper()
	j := f.claim(n, f.at(d))
	p := store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: outcome, Now: f.at(d)}
	if output != "" {
		p.Output = json.RawMessage(output)
	}
	if outcome != store.JobCompleted {
		p.Code = errcode.WordFailed
	}
	done, err := f.s.JobFinish(f.ctx, p)
	noErr(f, err, "JobFinish")
	return done
}

// stalled is what BatchStalledList names.
func (f *fx) stalled() []string {
	f.Helper()
	ids, err := f.s.BatchStalledList(f.ctx, store.BatchStalledListParams{})
	noErr(f, err, "BatchStalledList")
	return ids
}

func (f *fx) advance(id string, d time.Duration) store.BatchAdvanceResult {
	f.Helper()
	res, err := f.s.BatchAdvance(f.ctx, store.BatchAdvanceParams{ID: id, Now: f.at(d)})
	noErr(f, err, "BatchAdvance")
	return res
}

var batchTests = []test{
	{"Batch/Create", func(f *fx) {
		web1, web2 := f.node("web-1", "disk_usage"), f.node("web-2", "disk_usage")
		bare := f.node("db-1", "host_report")
		p := f.batchParams("disk_usage", web1, web2, bare)
		p.Skipped = []store.BatchSkip{{NodeID: "node_elsewhere", NodeName: "old-1", Reason: "the node does not report the word disk_usage"}}
		b := f.batch(p)
		if !strings.HasPrefix(b.ID, "batch_") || b.Jobs != 2 || b.Skipped != 2 || b.Word != "disk_usage" || b.Selector != "role=web" {
			f.Fatalf("created %+v", b)
		}
		got := f.getBatch(b.ID)
		if got.Counts != (store.BatchCounts{Queued: 2}) || got.Jobs != 2 || got.Skipped != 2 || !got.CreatedAt.Equal(f.at(0)) {
			f.Fatalf("stored %+v", got)
		}
		jobs := f.batchJobs(b.ID, "", "")
		if len(jobs) != 2 || jobs[0].NodeName != "web-1" || jobs[1].NodeName != "web-2" || jobs[0].BatchID != b.ID ||
			jobs[0].State != store.JobQueued || jobs[0].Held {
			f.Fatalf("jobs %+v", jobs)
		}
		// Its jobs are ordinary jobs: handed out by the claim, shown by JobGet.
		if j := f.claim(web1, f.at(time.Second)); j.BatchID != b.ID || j.Word != "disk_usage" {
			f.Fatalf("claimed %+v", j)
		}
		skips, err := f.s.BatchSkipList(f.ctx, store.BatchSkipListParams{ID: b.ID})
		noErr(f, err, "BatchSkipList")
		if len(skips.Skips) != 2 {
			f.Fatalf("skips %+v", skips)
		}
		for _, k := range skips.Skips {
			if k.NodeName != "db-1" && k.NodeName != "old-1" || !strings.Contains(k.Reason, "disk_usage") {
				f.Fatalf("skip %+v", k)
			}
		}
		list, err := f.s.BatchList(f.ctx, store.BatchListParams{})
		noErr(f, err, "BatchList")
		if len(list.Batches) != 1 || list.Batches[0].ID != b.ID || list.Batches[0].Jobs != 2 {
			f.Fatalf("list %+v", list)
		}
	}},
	{"Batch/CreateRefused", func(f *fx) {
		web1 := f.node("web-1", "disk_usage")
		bare := f.node("db-1", "host_report")
		cases := []struct {
			name string
			edit func(*store.BatchCreateParams)
			code string
		}{
			{"no targets", func(p *store.BatchCreateParams) { p.Targets = nil }, errcode.StoreParamInvalid},
			{"unknown node", func(p *store.BatchCreateParams) {
				p.Targets = append(p.Targets, store.BatchTarget{NodeID: "node_missing"})
			}, errcode.NodeNotFound},
			{"nobody has the word", func(p *store.BatchCreateParams) { p.Targets = []store.BatchTarget{{NodeID: bare.ID}} }, errcode.JobWordUnavailable},
			{"node twice", func(p *store.BatchCreateParams) { p.Targets = append(p.Targets, p.Targets[0]) }, errcode.StoreParamInvalid},
			{"negative bound", func(p *store.BatchCreateParams) { p.MaxParallel = -1 }, errcode.StoreParamInvalid},
			{"budget below none", func(p *store.BatchCreateParams) { p.ErrorBudget = -2 }, errcode.StoreParamInvalid},
			{"params not an object", func(p *store.BatchCreateParams) { p.Params = json.RawMessage(`[1]`) }, errcode.StoreParamInvalid},
			{"unknown class", func(p *store.BatchCreateParams) { p.Class = "harmless" }, errcode.StoreParamInvalid},
		}
		for _, c := range cases {
			p := f.batchParams("disk_usage", web1)
			c.edit(&p)
			_, err := f.s.BatchCreate(f.ctx, p)
			if !errcode.Has(err, c.code) {
				f.Fatalf("%s: got %v, want %s", c.name, err, c.code)
			}
		}
		// Nothing was created by any of them.
		list, err := f.s.BatchList(f.ctx, store.BatchListParams{})
		noErr(f, err, "BatchList")
		jobs, err := f.s.JobList(f.ctx, store.JobListParams{})
		noErr(f, err, "JobList")
		if len(list.Batches) != 0 || len(jobs.Jobs) != 0 {
			f.Fatalf("a refused batch left %d batches and %d jobs", len(list.Batches), len(jobs.Jobs))
		}
		f.noClaim(web1, f.at(time.Second))
		_, err = f.s.BatchGet(f.ctx, store.BatchGetParams{ID: "batch_missing"})
		testkit.WantCode(f, err, errcode.JobBatchNotFound)
		_, err = f.s.BatchJobList(f.ctx, store.BatchJobListParams{ID: "batch_missing"})
		testkit.WantCode(f, err, errcode.JobBatchNotFound)
	}},
	{"Batch/MaxParallel", func(f *fx) {
		var nodes []store.Node
		for i := range 5 {
			nodes = append(nodes, f.node(fmt.Sprintf("web-%d", i), "disk_usage"))
		}
		p := f.batchParams("disk_usage", nodes...)
		p.MaxParallel = 2
		b := f.batch(p)
		if c := f.getBatch(b.ID).Counts; c != (store.BatchCounts{Queued: 2, Waiting: 3}) {
			f.Fatalf("counts %+v", c)
		}
		// The held jobs wait: their nodes are handed nothing.
		for _, n := range nodes[2:] {
			f.noClaim(n, f.at(time.Second))
		}
		if w := f.batchJobs(b.ID, "waiting", ""); len(w) != 3 || !w[0].Held || w[0].NodeName != "web-2" {
			f.Fatalf("waiting %+v", w)
		}
		// Nothing ended: an advance releases nothing, and the batch is not stalled.
		if res := f.advance(b.ID, time.Second); len(res.Released) != 0 {
			f.Fatalf("released %+v", res.Released)
		}
		if s := f.stalled(); len(s) != 0 {
			f.Fatalf("stalled with no room: %v", s)
		}
		// A job ended and its advance has not run (the plane stopped in between): stalled.
		f.finishAs(nodes[0], 2*time.Second, store.JobCompleted, `{"ok":true}`)
		if s := f.stalled(); len(s) != 1 || s[0] != b.ID {
			f.Fatalf("stalled %v, want %s", s, b.ID)
		}
		res := f.advance(b.ID, 2*time.Second)
		if len(res.Released) != 1 || res.Released[0].NodeID != nodes[2].ID {
			f.Fatalf("released %+v", res.Released)
		}
		// A second advance with nothing new ended keeps the bound.
		if res := f.advance(b.ID, 2*time.Second); len(res.Released) != 0 {
			f.Fatalf("released again %+v", res.Released)
		}
		if s := f.stalled(); len(s) != 0 {
			f.Fatalf("stalled after its advance: %v", s)
		}
		f.claim(nodes[2], f.at(3*time.Second))
		f.noClaim(nodes[3], f.at(3*time.Second))
		if c := f.getBatch(b.ID).Counts; c != (store.BatchCounts{Queued: 1, Running: 1, Waiting: 2, Completed: 1}) {
			f.Fatalf("counts %+v", c)
		}
	}},
	{"Batch/ErrorBudget", func(f *fx) {
		var nodes []store.Node
		for i := range 5 {
			nodes = append(nodes, f.node(fmt.Sprintf("web-%d", i), "disk_usage"))
		}
		p := f.batchParams("disk_usage", nodes...)
		p.MaxParallel, p.ErrorBudget = 3, 1
		b := f.batch(p)
		f.finishAs(nodes[0], time.Second, store.JobFailed, "")
		if res := f.advance(b.ID, time.Second); res.Stopped || len(res.Released) != 1 {
			f.Fatalf("one failure within a budget of one: %+v", res)
		}
		f.claim(nodes[2], f.at(time.Second))
		f.finishAs(nodes[1], 2*time.Second, store.JobRefused, "")
		// Past the budget with jobs queued and no advance yet: stalled, room or not.
		if s := f.stalled(); len(s) != 1 || s[0] != b.ID {
			f.Fatalf("stalled %v, want %s", s, b.ID)
		}
		res := f.advance(b.ID, 2*time.Second)
		if !res.Stopped || len(res.Released) != 0 || len(res.Cancelled) != 2 || !strings.Contains(res.Batch.StopReason, "error budget") {
			f.Fatalf("two failures past a budget of one: %+v", res)
		}
		for _, j := range res.Cancelled {
			if j.State != store.JobCancelled || j.OutcomeCode != errcode.JobBatchStopped {
				f.Fatalf("cancelled %+v", j)
			}
		}
		got := f.getBatch(b.ID)
		// The running job goes on; the queued ones (held or not) were cancelled.
		if got.StopReason == "" || !got.StoppedAt.Equal(f.at(2*time.Second)) ||
			got.Counts != (store.BatchCounts{Running: 1, Failed: 1, Refused: 1, Cancelled: 2}) {
			f.Fatalf("stopped batch %+v", got)
		}
		// A stopped batch stays as it is.
		if res := f.advance(b.ID, 3*time.Second); res.Stopped || len(res.Released)+len(res.Cancelled) != 0 {
			f.Fatalf("advance of a stopped batch: %+v", res)
		}
		if s := f.stalled(); len(s) != 0 {
			f.Fatalf("a stopped batch is stalled: %v", s)
		}
	}},
	{"Batch/Groups", func(f *fx) {
		var nodes []store.Node
		for i := range 6 {
			nodes = append(nodes, f.node(fmt.Sprintf("web-%d", i), "disk_usage"))
		}
		b := f.batch(f.batchParams("disk_usage", nodes...))
		for i, out := range []string{`{"free":1}`, `{"free":1}`, `{"free":1}`, `{"free":2}`} {
			f.finishAs(nodes[i], time.Second, store.JobCompleted, out)
		}
		f.finishAs(nodes[4], time.Second, store.JobFailed, "")
		groups, err := f.s.BatchGroupList(f.ctx, store.BatchGroupListParams{ID: b.ID})
		noErr(f, err, "BatchGroupList")
		if len(groups) != 3 || groups[0].Count != 3 || string(groups[0].Output) != `{"free":1}` || groups[0].State != store.JobCompleted ||
			groups[1].Count != 1 || groups[2].Count != 1 {
			f.Fatalf("groups %+v", groups)
		}
		same3 := f.batchJobs(b.ID, "", groups[0].Like)
		if len(same3) != 3 || same3[0].NodeName != "web-0" || string(same3[2].Output) != `{"free":1}` {
			f.Fatalf("the group's jobs %+v", same3)
		}
		if failed := f.batchJobs(b.ID, string(store.JobFailed), ""); len(failed) != 1 || failed[0].NodeName != "web-4" {
			f.Fatalf("failed %+v", failed)
		}
		if queued := f.batchJobs(b.ID, string(store.JobQueued), ""); len(queued) != 1 || queued[0].NodeName != "web-5" {
			f.Fatalf("queued %+v", queued)
		}
		_, err = f.s.BatchJobList(f.ctx, store.BatchJobListParams{ID: b.ID, State: "sleeping"})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
}

// batchRaceTests are run with the concurrency tests (and under the race detector by make test).
var batchRaceTests = []test{
	{"Concurrent/BatchAdvanceAcrossReplicas", func(f *fx) {
		// Nodes finish their jobs and advance the batch at once on two replicas: the bound holds at
		// every step and every job is handed out once, until all ended.
		const nodes, bound = 12, 3
		var ns []store.Node
		for i := range nodes {
			ns = append(ns, f.node(fmt.Sprintf("web-%d", i), "disk_usage"))
		}
		p := f.batchParams("disk_usage", ns...)
		p.MaxParallel = bound
		b := f.batch(p)
		stores := []store.Store{f.s, f.env.Peer(f)}
		for round := 0; ; round++ {
			c := f.getBatch(b.ID).Counts
			if c.Queued+c.Running > bound {
				f.Fatalf("round %d: %+v past the bound of %d", round, c, bound)
			}
			if c.Open() == 0 {
				if c.Completed != nodes {
					f.Fatalf("ended %+v", c)
				}
				return
			}
			if round > nodes*2 {
				f.Fatalf("the batch does not move: %+v", c)
			}
			var wg sync.WaitGroup
			errs := make(chan error, nodes)
			for i, n := range ns {
				st := stores[i%2]
				wg.Go(func() {
					j, err := st.JobClaim(f.ctx, store.JobClaimParams{NodeID: n.ID})
					if err != nil || j == nil {
						errs <- err
						return
					}
					if _, err := st.JobFinish(f.ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted}); err != nil {
						errs <- err
						return
					}
					_, err = st.BatchAdvance(f.ctx, store.BatchAdvanceParams{ID: b.ID})
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil && !errcode.Has(err, errcode.StoreBusy) {
					f.Fatalf("round %d: %v", round, err)
				}
			}
		}
	}},
}
