package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// BatchAdvancer is the store method that moves a batch on once one of its jobs ended.
type BatchAdvancer interface {
	BatchAdvance(ctx context.Context, p store.BatchAdvanceParams) (store.BatchAdvanceResult, error)
}

// Batch limits of the room.
const (
	// showGroups and showSkips bound what a batch's show carries; the jobs and skips routes page.
	showGroups = 20
	showSkips  = 100
)

// CreateBatch runs req's word on every active node its selector matches, one job a node, as one
// batch. The checks are Create's, made once for each module the matched nodes report: the role the
// word's class needs and its params schema. A node that does not report the word (or reports a
// module no release pins) is named among the batch's skips, never dropped silently; nothing is
// created when the selector is malformed, matches no node, or no matched node has the word.
func (r *Room) CreateBatch(ctx context.Context, who api.Token, req api.BatchRequest) (api.Batch, error) {
	budget := store.NoErrorBudget
	if req.ErrorBudget != nil {
		budget = *req.ErrorBudget
	}
	switch {
	case req.MaxParallel < 0 || req.MaxParallel > store.MaxBatchJobs:
		return api.Batch{}, errcode.New(errcode.JobBoundsInvalid, "max_parallel %d is outside 0 (no bound) to %d", req.MaxParallel, store.MaxBatchJobs).
			With(errcode.DetailField, "max_parallel")
	case budget < store.NoErrorBudget || (req.ErrorBudget != nil && budget < 0) || budget > store.MaxBatchJobs:
		return api.Batch{}, errcode.New(errcode.JobBoundsInvalid, "error_budget %d is outside 0 to %d (leave it out for no budget)", budget, store.MaxBatchJobs).
			With(errcode.DetailField, "error_budget")
	case req.Word == "":
		return api.Batch{}, errcode.New(errcode.RequestMalformed, "a batch needs a word").With(errcode.DetailField, "word")
	case strings.TrimSpace(req.Selector) == "":
		return api.Batch{}, errcode.New(errcode.JobSelectorInvalid,
			"a batch needs a selector: all, node names (web-1,web-2) or labels (role=web,zone=a)").With(errcode.DetailField, "selector")
	case len(req.Selector) > store.MaxRefLen:
		return api.Batch{}, errcode.New(errcode.JobSelectorInvalid, "the selector is over %d bytes", store.MaxRefLen).With(errcode.DetailField, "selector")
	}
	if string(req.Params) == "null" {
		req.Params = nil // as absent: the word's defaults
	}
	sel, err := ParseSelector("selector", req.Selector)
	if err != nil {
		return api.Batch{}, err
	}
	active, err := r.activeNodes(ctx)
	if err != nil {
		return api.Batch{}, err
	}
	var matched []store.Node
	for _, n := range active {
		if sel.Match(n) {
			matched = append(matched, n)
		}
	}
	if err := unmatched(sel, active, matched); err != nil {
		return api.Batch{}, err
	}

	// Each module the matched nodes report is checked once: its manifest, the role its class needs,
	// the params against its schema.
	type module struct {
		m     *manifest.Manifest
		known bool
	}
	modules := map[string]module{}
	p := store.BatchCreateParams{Word: req.Word, Selector: strings.TrimSpace(req.Selector), MaxParallel: req.MaxParallel,
		ErrorBudget: budget, CreatedBy: who.Name, Now: r.c.Now()}
	var firstErr error
	for _, n := range matched {
		ref, ok := n.Word(req.Word)
		if !ok {
			reason := "the node does not report the word " + req.Word
			if n.Update.NeedsNewerAgent != "" {
				reason += fmt.Sprintf(" yet: its agent %s is updating itself to %s first", n.AgentVersion, n.Update.NeedsNewerAgent)
			}
			p.Skipped = append(p.Skipped, store.BatchSkip{NodeID: n.ID, NodeName: n.Name, Reason: reason})
			continue
		}
		mod, seen := modules[ref.Digest]
		if !seen {
			mod.m, mod.known, err = r.c.Manifests.Word(ctx, req.Word, ref.Digest)
			if err != nil {
				return api.Batch{}, err
			}
			modules[ref.Digest] = mod
			if mod.known {
				if err := r.checkModule(who, mod.m, &p, req); err != nil {
					firstErr = cmp(firstErr, err)
				}
			}
		}
		if !mod.known {
			p.Skipped = append(p.Skipped, store.BatchSkip{NodeID: n.ID, NodeName: n.Name,
				Reason: "the node reports " + req.Word + " with digest " + ref.Digest + ", which no release on this plane pins"})
			continue
		}
		p.Targets = append(p.Targets, store.BatchTarget{NodeID: n.ID, WordDigest: ref.Digest})
	}
	if firstErr != nil {
		return api.Batch{}, firstErr
	}
	if len(p.Targets) == 0 {
		names := make([]string, 0, min(len(p.Skipped), 5))
		for _, k := range p.Skipped[:min(len(p.Skipped), 5)] {
			names = append(names, k.NodeName)
		}
		return api.Batch{}, errcode.New(errcode.JobWordUnavailable,
			"none of the %d nodes the selector matched (%s%s) reports the word %q; nothing was created: publish a release that pins it and wait for the nodes to load it",
			len(matched), strings.Join(names, ", "), more(len(p.Skipped), len(names)), req.Word).With(errcode.DetailWord, req.Word)
	}
	b, err := r.c.Store.BatchCreate(ctx, p)
	if err != nil {
		return api.Batch{}, err
	}
	r.log.Info("batch queued", "batch", b.ID, "word", b.Word, "selector", b.Selector, "jobs", b.Jobs, "skipped", b.Skipped,
		"max_parallel", b.MaxParallel, "error_budget", b.ErrorBudget, "by", b.CreatedBy)
	for range b.Jobs {
		r.c.Metrics.JobQueued(b.Word)
	}
	return r.ShowBatch(ctx, who, b.ID)
}

// checkModule holds a batch to one module's manifest: the role its class needs and its params. The
// class, params and budget of the batch are the strictest the modules ask.
func (r *Room) checkModule(who api.Token, m *manifest.Manifest, p *store.BatchCreateParams, req api.BatchRequest) error {
	role := api.RoleOperator
	if m.Class == manifest.ClassDestructive {
		role = api.RoleAdmin
	}
	if err := tokens.Need(who, role); err != nil {
		return err
	}
	params, err := Params(m, req.Params)
	if err != nil {
		return err
	}
	p.Params = params
	if manifest.Class(p.Class).Rank() < m.Class.Rank() {
		p.Class = string(m.Class)
	}
	p.Budget = max(p.Budget, Budget(m))
	return nil
}

// cmp keeps the first error.
func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func more(total, shown int) string {
	if total > shown {
		return fmt.Sprintf(" and %d more", total-shown)
	}
	return ""
}

// unmatched refuses a selector that matched no active node, saying why as well as it can: a name
// that is no active node, or a label key no node carries.
func unmatched(sel Selector, active, matched []store.Node) error {
	var missing []string
	for _, name := range sel.Names {
		if !slices.ContainsFunc(matched, func(n store.Node) bool { return n.Name == name }) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return errcode.New(errcode.JobSelectorEmpty, "no active node is named %s; nothing was created (lexicon nodes list)", strings.Join(missing, ", ")).
			With(errcode.DetailField, "selector")
	}
	if len(matched) > 0 {
		return nil
	}
	if k := sel.UnknownKey(active); k != "" {
		return errcode.New(errcode.JobSelectorEmpty, "no active node carries the label key %q; nothing was created (lexicon nodes list shows the labels)", k).
			With(errcode.DetailField, "selector").With(errcode.DetailName, k)
	}
	return errcode.New(errcode.JobSelectorEmpty, "the selector matches no active node; nothing was created").With(errcode.DetailField, "selector")
}

// activeNodes reads every active node, a page at a time.
func (r *Room) activeNodes(ctx context.Context) ([]store.Node, error) {
	var out []store.Node
	cursor := ""
	for {
		res, err := r.c.Store.NodeList(ctx, store.NodeListParams{State: store.NodeActive, Limit: store.MaxListLimit, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		out = append(out, res.Nodes...)
		if cursor = res.NextCursor; cursor == "" {
			return out, nil
		}
	}
}

// ShowBatch answers a batch with its jobs counted, its ended jobs grouped by outcome and output (the
// largest groups), and the first of its skipped nodes.
func (r *Room) ShowBatch(ctx context.Context, who api.Token, id string) (api.Batch, error) {
	b, err := r.c.Store.BatchGet(ctx, store.BatchGetParams{ID: id})
	if err != nil {
		return api.Batch{}, err
	}
	groups, err := r.c.Store.BatchGroupList(ctx, store.BatchGroupListParams{ID: id, Limit: showGroups})
	if err != nil {
		return api.Batch{}, err
	}
	out := batchAnswer(b)
	out.State = batchState(b)
	out.Groups = apiconv.Each(groups, func(g store.BatchGroup) api.BatchGroup {
		return api.BatchGroup{State: g.State, Code: g.Code, Output: g.Output, Count: g.Count, Like: g.Like}
	})
	if b.Skipped > 0 {
		skips, err := r.c.Store.BatchSkipList(ctx, store.BatchSkipListParams{ID: id, Limit: showSkips})
		if err != nil {
			return api.Batch{}, err
		}
		out.Skips = apiconv.Each(skips.Skips, skipAnswer)
	}
	return out, nil
}

func batchAnswer(b store.Batch) api.Batch {
	c := b.Counts
	return api.Batch{ID: b.ID, Word: b.Word, Selector: b.Selector, Class: b.Class, Params: b.Params, MaxParallel: b.MaxParallel,
		ErrorBudget: b.ErrorBudget, Jobs: b.Jobs, Skipped: b.Skipped, CreatedBy: b.CreatedBy, CreatedAt: b.CreatedAt,
		StoppedAt: b.StoppedAt, StopReason: b.StopReason,
		Counts: api.BatchCounts{Waiting: c.Waiting, Queued: c.Queued, Running: c.Running, Completed: c.Completed,
			Failed: c.Failed, Refused: c.Refused, Lost: c.Lost, Cancelled: c.Cancelled}}
}

func skipAnswer(k store.BatchSkip) api.BatchSkip {
	return api.BatchSkip{NodeID: k.NodeID, NodeName: k.NodeName, Reason: k.Reason}
}

// batchState is where a batch stands, from its stop and its jobs.
func batchState(b store.Batch) api.BatchState {
	open := b.Counts.Open() > 0
	switch {
	case b.StopReason != "" && open:
		return api.BatchStopping
	case b.StopReason != "":
		return api.BatchStopped
	case open:
		return api.BatchRunning
	}
	return api.BatchDone
}

// ListBatches lists batches newest first.
func (r *Room) ListBatches(ctx context.Context, who api.Token, q api.BatchesListQuery) (api.BatchList, error) {
	res, err := r.c.Store.BatchList(ctx, store.BatchListParams{Limit: q.Limit, Cursor: q.Cursor})
	if err != nil {
		return api.BatchList{}, err
	}
	return api.BatchList{Batches: apiconv.Each(res.Batches, batchAnswer), NextCursor: res.NextCursor}, nil
}

// BatchJobs pages a batch's jobs with their outputs and their nodes' names, read with the jobs in one
// query.
func (r *Room) BatchJobs(ctx context.Context, who api.Token, id string, q api.BatchJobsQuery) (api.BatchJobList, error) {
	res, err := r.c.Store.BatchJobList(ctx, store.BatchJobListParams{ID: id, State: q.State, Like: q.Like, Limit: q.Limit, Cursor: q.Cursor})
	if err != nil {
		return api.BatchJobList{}, err
	}
	return api.BatchJobList{Jobs: apiconv.Each(res.Jobs, func(j store.BatchJob) api.Job {
		a := apiconv.Job(j.Job, j.NodeName)
		a.Waiting = j.Held && j.State == store.JobQueued
		return a
	}), NextCursor: res.NextCursor}, nil
}

// BatchSkips pages the nodes a batch matched but gave no job.
func (r *Room) BatchSkips(ctx context.Context, who api.Token, id string, q api.BatchesListQuery) (api.BatchSkipList, error) {
	if _, err := r.c.Store.BatchGet(ctx, store.BatchGetParams{ID: id}); err != nil {
		return api.BatchSkipList{}, err
	}
	res, err := r.c.Store.BatchSkipList(ctx, store.BatchSkipListParams{ID: id, Limit: q.Limit, Cursor: q.Cursor})
	if err != nil {
		return api.BatchSkipList{}, err
	}
	return api.BatchSkipList{Skips: apiconv.Each(res.Skips, skipAnswer), NextCursor: res.NextCursor}, nil
}

// batchMover moves on the batches of jobs that just ended: releases held jobs into the room the
// bound left, or stops a batch whose failures passed its budget. A failure here, or a plane stopped
// between a job's end and its batch's advance, leaves the batch waiting, never half moved (each
// advance is one transaction): the expirer's pass finds it (BatchStalledList) and advances it. A batch with neither bound nor budget, or stopped, never needs moving again (neither
// changes): it is remembered, so its results cost no advance at all.
type batchMover struct {
	st    BatchAdvancer
	log   *slog.Logger
	m     *metrics.Plane
	inert sync.Map // batch id -> struct{}
}

func (b *batchMover) advance(ctx context.Context, now time.Time, ended ...store.Job) {
	var done []string
	for _, j := range ended {
		if j.BatchID == "" || slices.Contains(done, j.BatchID) {
			continue
		}
		done = append(done, j.BatchID)
		if _, ok := b.inert.Load(j.BatchID); ok {
			continue
		}
		b.advanceBatch(ctx, now, j.BatchID)
	}
}

func (b *batchMover) advanceBatch(ctx context.Context, now time.Time, id string) {
	res, err := b.st.BatchAdvance(ctx, store.BatchAdvanceParams{ID: id, Now: now})
	if err != nil {
		b.log.Warn("batch advance failed", "batch", id, "err", err)
		return
	}
	if res.Batch.StopReason != "" || (res.Batch.MaxParallel == 0 && res.Batch.ErrorBudget == store.NoErrorBudget) {
		b.inert.Store(id, struct{}{})
	}
	if res.Stopped {
		b.log.Warn("batch stopped", "batch", id, "reason", res.Batch.StopReason, "cancelled", len(res.Cancelled))
	}
	for _, c := range res.Cancelled {
		b.m.JobEnded(c.Word, string(c.State))
	}
}
