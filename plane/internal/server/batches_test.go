package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// batchFleet is a trusted plane with nodes web-0..web-(n-1) labelled role=web that report vocab, and
// db-0 (role=db) that reports nothing.
type batchFleet struct {
	*trustedPlane
	keys  []keys.NodePrivate
	vocab []channel.Word
}

func newBatchFleet(t *testing.T, n int) *batchFleet {
	t.Helper()
	p := newTrustedPlane(t, wire.Config{})
	rel := p.publish([]testWord{{name: "peek", class: manifest.ClassLook}, {name: "wipe", class: manifest.ClassDestructive}}, nil)
	f := &batchFleet{trustedPlane: p, vocab: []channel.Word{rel.words["peek"], rel.words["wipe"]}}
	enrol := func(name, role string, vocab []channel.Word) {
		k := keys.NewNode()
		j, err := p.st.JoinCreate(t.Context(), store.JoinCreateParams{Name: name, Key: k.Public().String(), Fingerprint: k.Public().Fingerprint(), SourceAddress: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.st.JoinApprove(t.Context(), store.JoinApproveParams{ID: j.Join.ID, Fingerprint: k.Public().Fingerprint(), By: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.st.NodeLabel(t.Context(), store.NodeLabelParams{ID: res.Node.ID, Set: map[string]string{"role": role}, By: "test"}); err != nil {
			t.Fatal(err)
		}
		p.report(k, vocab...)
		if role == "web" {
			f.keys = append(f.keys, k)
		}
	}
	for i := range n {
		enrol(fmt.Sprintf("web-%d", i), "web", f.vocab)
	}
	enrol("db-0", "db", nil)
	return f
}

func (f *batchFleet) start(req api.BatchRequest) api.Batch {
	f.t.Helper()
	body, _ := json.Marshal(req)
	var b api.Batch
	f.want(http.StatusCreated, "", store.RoleOperator, http.MethodPost, "/batches", body, &b)
	return b
}

func (f *batchFleet) show(id string) api.Batch {
	f.t.Helper()
	var b api.Batch
	f.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/batches/"+id, nil, &b)
	return b
}

// run has node i claim and answer its job with outcome and output; it reports whether it had a job.
func (f *batchFleet) run(i int, outcome channel.JobState, output string) bool {
	f.t.Helper()
	body, _ := json.Marshal(channel.ClaimRequest{Idle: true, Version: "test", Vocabulary: f.vocab, Recipes: []channel.RecipeReport{}})
	var resp channel.ClaimResponse
	if status, code := f.call(channel.PathClaim, body, f.keys[i], &resp); status != http.StatusOK {
		f.t.Fatalf("claim of web-%d: %d %s", i, status, code)
	}
	if resp.Job == nil {
		return false
	}
	res := channel.ResultRequest{JobID: resp.Job.ID, Outcome: outcome, Output: json.RawMessage(output)}
	if outcome != channel.OutcomeCompleted {
		res.Code, res.Output = errcode.WordFailed, nil
	}
	result, _ := json.Marshal(res)
	if status, code := f.post(channel.PathResult, result, f.keys[i]); status != http.StatusOK {
		f.t.Fatalf("result of web-%d: %d %s", i, status, code)
	}
	return true
}

func budget(n int) *int { return &n }

// TestBatchRefusesBadInputCreatingNothing: an unknown selector form, a selector matching nothing, bad
// bounds, nodes without the word and a word the token's role does not cover are refused with their
// codes, and no batch or job exists afterwards.
func TestBatchRefusesBadInputCreatingNothing(t *testing.T) {
	f := newBatchFleet(t, 2)
	for _, tc := range []struct {
		name   string
		req    api.BatchRequest
		status int
		code   string
	}{
		{"no selector", api.BatchRequest{Word: "peek"}, http.StatusBadRequest, errcode.JobSelectorInvalid},
		{"mixed selector", api.BatchRequest{Word: "peek", Selector: "web-0,role=web"}, http.StatusBadRequest, errcode.JobSelectorInvalid},
		{"malformed term", api.BatchRequest{Word: "peek", Selector: "role=web=x"}, http.StatusBadRequest, errcode.JobSelectorInvalid},
		{"unknown label key", api.BatchRequest{Word: "peek", Selector: "rol=web"}, http.StatusUnprocessableEntity, errcode.JobSelectorEmpty},
		{"no such value", api.BatchRequest{Word: "peek", Selector: "role=cache"}, http.StatusUnprocessableEntity, errcode.JobSelectorEmpty},
		{"unknown name", api.BatchRequest{Word: "peek", Selector: "web-0,web-9"}, http.StatusUnprocessableEntity, errcode.JobSelectorEmpty},
		{"negative parallel", api.BatchRequest{Word: "peek", Selector: "all", MaxParallel: -1}, http.StatusBadRequest, errcode.JobBoundsInvalid},
		{"negative budget", api.BatchRequest{Word: "peek", Selector: "all", ErrorBudget: budget(-1)}, http.StatusBadRequest, errcode.JobBoundsInvalid},
		{"nobody has the word", api.BatchRequest{Word: "peek", Selector: "role=db"}, http.StatusUnprocessableEntity, errcode.JobWordUnavailable},
		{"bad params", api.BatchRequest{Word: "peek", Selector: "all", Params: json.RawMessage(`{"n":"x"}`)}, http.StatusUnprocessableEntity, errcode.WordParamInvalid},
		{"destructive for an operator", api.BatchRequest{Word: "wipe", Selector: "all"}, http.StatusForbidden, errcode.AuthForbidden},
	} {
		body, _ := json.Marshal(tc.req)
		status, code, data := f.admin(store.RoleOperator, http.MethodPost, "/batches", body)
		if status != tc.status || code != tc.code {
			t.Errorf("%s: %d %s, want %d %s: %s", tc.name, status, code, tc.status, tc.code, data)
		}
	}
	var list api.BatchList
	f.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/batches", nil, &list)
	jobs, err := f.st.JobList(t.Context(), store.JobListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Batches) != 0 || len(jobs.Jobs) != 0 {
		t.Fatalf("refused batches left %d batches and %d jobs", len(list.Batches), len(jobs.Jobs))
	}
	f.want(http.StatusNotFound, errcode.JobBatchNotFound, store.RoleViewer, http.MethodGet, "/batches/batch_missing", nil, nil)
}

// TestBatchMaxParallelAndGroups: a batch on every node holds the jobs past its bound, hands them out
// as earlier ones end, names the node without the word, and groups identical outputs.
func TestBatchMaxParallelAndGroups(t *testing.T) {
	f := newBatchFleet(t, 5)
	b := f.start(api.BatchRequest{Word: "peek", Selector: "all", Params: json.RawMessage(`{"n":1}`), MaxParallel: 2})
	// The plane's own node n1 reports no words either.
	if b.Jobs != 5 || b.Skipped != 2 || len(b.Skips) != 2 || b.Skips[1].NodeName != "db-0" || !strings.Contains(b.Skips[1].Reason, "peek") ||
		b.Counts != (api.BatchCounts{Queued: 2, Waiting: 3}) || b.State != api.BatchRunning || b.ErrorBudget != -1 {
		t.Fatalf("started %+v", b)
	}
	// The held nodes are handed nothing until an earlier job ends.
	if f.run(2, channel.OutcomeCompleted, `{}`) || f.run(4, channel.OutcomeCompleted, `{}`) {
		t.Fatal("a job past the bound was handed out")
	}
	outputs := []string{`{"free":1}`, `{"free":1}`, `{"free":1}`, `{"free":2}`, `{"free":1}`}
	for round := 0; round < 5; round++ {
		ran := 0
		for i := range 5 {
			if f.run(i, channel.OutcomeCompleted, outputs[i]) {
				ran++
			}
		}
		c := f.show(b.ID).Counts
		if c.Queued+c.Running > 2 {
			t.Fatalf("round %d: %+v past the bound of 2", round, c)
		}
		if c.Completed == 5 {
			break
		}
		if ran == 0 {
			t.Fatalf("round %d: nothing handed out: %+v", round, c)
		}
	}
	got := f.show(b.ID)
	if got.State != api.BatchDone || got.Counts != (api.BatchCounts{Completed: 5}) || len(got.Groups) != 2 ||
		got.Groups[0].Count != 4 || string(got.Groups[0].Output) != `{"free":1}` || got.Groups[1].Count != 1 {
		t.Fatalf("done %+v", got)
	}
	var group api.BatchJobList
	f.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/batches/"+b.ID+"/jobs?limit=3&like="+got.Groups[1].Like, nil, &group)
	if len(group.Jobs) != 1 || group.Jobs[0].NodeName != "web-3" || string(group.Jobs[0].Output) != `{"free":2}` || group.Jobs[0].BatchID != b.ID {
		t.Fatalf("the odd one out %+v", group)
	}
	var page api.BatchJobList
	f.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/batches/"+b.ID+"/jobs?limit=3", nil, &page)
	if len(page.Jobs) != 3 || page.NextCursor == "" || page.Jobs[0].NodeName != "web-0" {
		t.Fatalf("first page %+v", page)
	}
	var rest api.BatchJobList
	f.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/batches/"+b.ID+"/jobs?limit=3&cursor="+page.NextCursor, nil, &rest)
	if len(rest.Jobs) != 2 || rest.NextCursor != "" {
		t.Fatalf("second page %+v", rest)
	}
}

// TestBatchErrorBudgetStops: more failures than the budget stop the batch; its queued jobs are
// cancelled, and the batch says why.
func TestBatchErrorBudgetStops(t *testing.T) {
	f := newBatchFleet(t, 5)
	b := f.start(api.BatchRequest{Word: "peek", Selector: "role=web", MaxParallel: 2, ErrorBudget: budget(1)})
	f.run(0, channel.OutcomeFailed, "")
	if got := f.show(b.ID); got.State != api.BatchRunning || got.Counts.Failed != 1 {
		t.Fatalf("one failure within the budget: %+v", got)
	}
	f.run(1, channel.OutcomeFailed, "") // the second failure passes the budget of one
	got := f.show(b.ID)
	if got.State != api.BatchStopped || !strings.Contains(got.StopReason, "error budget") || got.Counts.Cancelled != 3 ||
		got.Counts.Open() != 0 || got.Counts.Failed+got.Counts.Cancelled != 5 {
		t.Fatalf("stopped %+v", got)
	}
	var cancelled api.BatchJobList
	f.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/batches/"+b.ID+"/jobs?state=cancelled", nil, &cancelled)
	for _, j := range cancelled.Jobs {
		if j.OutcomeCode != errcode.JobBatchStopped {
			t.Fatalf("cancelled %+v", j)
		}
	}
	for i := range 5 {
		if f.run(i, channel.OutcomeCompleted, `{}`) {
			t.Fatalf("web-%d was handed a job of a stopped batch", i)
		}
	}
}

// TestBatchMovesOnWhenANodeGoes: a node disconnected (or gone by its own goodbye) while its job is in a
// batch cancels the job, and the batch moves on as if the job had ended: the room its bound held is
// given to a waiting job, and the batch ends rather than waiting on a node that is gone.
func TestBatchMovesOnWhenANodeGoes(t *testing.T) {
	f := newBatchFleet(t, 3)
	b := f.start(api.BatchRequest{Word: "peek", Selector: "role=web", MaxParallel: 1})
	jobs := func(state string) []api.Job {
		var l api.BatchJobList
		f.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/batches/"+b.ID+"/jobs?state="+state, nil, &l)
		return l.Jobs
	}
	waiting := jobs("waiting")
	var inRoom api.Job
	for _, j := range jobs("queued") {
		if j.NodeID != waiting[0].NodeID && j.NodeID != waiting[1].NodeID {
			inRoom = j
		}
	}
	if len(waiting) != 2 || inRoom.ID == "" {
		t.Fatalf("waiting %+v, in the room %+v", waiting, inRoom)
	}
	// The node whose job holds the batch's only place goes, and so does one that waits.
	for _, id := range []string{inRoom.NodeID, waiting[0].NodeID} {
		f.want(http.StatusOK, "", store.RoleAdmin, http.MethodPost, "/nodes/"+id+"/disconnect", nil, nil)
	}
	if got := f.show(b.ID); got.Counts != (api.BatchCounts{Queued: 1, Cancelled: 2}) || got.State != api.BatchRunning {
		t.Fatalf("after two nodes went: %+v", got)
	}
	last := -1
	for i, k := range f.keys {
		if n, err := f.st.NodeGetByKey(t.Context(), store.NodeGetByKeyParams{Fingerprint: k.Public().Fingerprint()}); err == nil && n.ID == waiting[1].NodeID {
			last = i
		}
	}
	if !f.run(last, channel.OutcomeCompleted, `{}`) {
		t.Fatal("the job the bound released was not handed out")
	}
	if got := f.show(b.ID); got.State != api.BatchDone || got.Counts != (api.BatchCounts{Completed: 1, Cancelled: 2}) {
		t.Fatalf("done %+v", got)
	}
}
