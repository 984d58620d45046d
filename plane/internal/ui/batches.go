package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// batchForm is the run page's second form: one word across the nodes a label picks.
type batchForm struct {
	Labels []string // key=value of the listed nodes, each once, sorted
	Words  []string // the words the listed nodes report, each once, sorted
	// The values given, kept when the plane refuses them.
	Selector, Word, Params, MaxParallel, ErrorBudget string
	Error                                            string
}

// newBatchForm offers the labels and words of the active nodes the run page lists.
func newBatchForm(nodes []api.Node) *batchForm {
	f := &batchForm{Selector: "all", Params: "{}"}
	for _, n := range nodes {
		for k, v := range n.Labels {
			if l := k + "=" + v; !slices.Contains(f.Labels, l) {
				f.Labels = append(f.Labels, l)
			}
		}
		for _, w := range n.Vocabulary {
			if !slices.Contains(f.Words, w.Name) {
				f.Words = append(f.Words, w.Name)
			}
		}
	}
	slices.Sort(f.Labels)
	slices.Sort(f.Words)
	return f
}

// batchStart runs the form's word on the nodes its selector picks, and shows the batch; the plane's
// refusal is shown on the run page with the values given.
func (u *UI) batchStart(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	req := api.BatchRequest{Word: f.Get("word"), Selector: strings.TrimSpace(f.Get("selector")), Params: json.RawMessage(strings.TrimSpace(f.Get("params")))}
	bad := ""
	if !json.Valid(req.Params) {
		bad = "Params must be a JSON object, such as {} or {\"path\": \"/var\"}."
	}
	if s := strings.TrimSpace(f.Get("max_parallel")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			bad = "At most at once must be a whole number (0 for no bound)."
		}
		req.MaxParallel = n
	}
	if s := strings.TrimSpace(f.Get("error_budget")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			bad = "Error budget must be a whole number (empty for none)."
		}
		req.ErrorBudget = &n
	}
	var err error
	if bad == "" {
		var b api.Batch
		if b, err = run(u, r, api.BatchesCreate, u.cfg.Jobs.CreateBatch, req); err == nil {
			http.Redirect(w, r, Prefix+"/batches/"+url.PathEscape(b.ID), http.StatusSeeOther)
			return
		}
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		bad = errMessage(r, err)
	}
	list, lerr := run(u, r, api.NodesList, u.cfg.Nodes.List, api.NodesListQuery{State: api.NodeActive, Limit: 200})
	if lerr != nil {
		u.fail(w, r, nil, lerr)
		return
	}
	bf := newBatchForm(list.Nodes)
	bf.Selector, bf.Word, bf.Params, bf.MaxParallel, bf.ErrorBudget, bf.Error = req.Selector, req.Word, f.Get("params"), f.Get("max_parallel"), f.Get("error_budget"), bad
	status := http.StatusBadRequest
	if err != nil {
		status = errcode.Status(errcode.Code(err))
	}
	v := from(r)
	u.render(w, r, status, "run", &v, runData{Nodes: list.Nodes, Batch: bf})
}

type batchData struct {
	api.Batch
	Jobs       []api.Job
	Filter     string // the outcome filter
	Like       string // the group filter
	NextCursor string
	Outcomes   []string
}

// batchOutcomes are the filters the batch page offers.
var batchOutcomes = []string{"completed", "failed", "refused", "lost", "cancelled", "running", "queued", "waiting"}

// batch shows a batch: its counts, its outputs grouped, its skipped nodes, and a page of its nodes
// side by side, narrowed by outcome or group.
func (u *UI) batch(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	b, err := run(u, r, api.BatchesShow, u.cfg.Jobs.ShowBatch, id)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	q, err := api.ParseBatchJobsQuery(r.URL.Query())
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	q.Limit = pageSize
	page, err := run(u, r, api.BatchesJobs, func(ctx context.Context, who api.Token, q api.BatchJobsQuery) (api.BatchJobList, error) {
		return u.cfg.Jobs.BatchJobs(ctx, who, id, q)
	}, q)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "batch", batchData{Batch: b, Jobs: page.Jobs, Filter: q.State, Like: q.Like, NextCursor: page.NextCursor, Outcomes: batchOutcomes})
}

func (u *UI) batches(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseBatchesListQuery(r.URL.Query())
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	q.Limit = pageSize
	list, err := run(u, r, api.BatchesList, u.cfg.Jobs.ListBatches, q)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "batches", list)
}
