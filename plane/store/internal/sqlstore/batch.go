package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

func checkBatchCreate(p *BatchCreateParams) error {
	job := JobCreateParams{NodeID: "node_batch", Word: p.Word, Class: p.Class, Params: p.Params, Budget: p.Budget, CreatedBy: p.CreatedBy}
	if err := checkJobCreate(&job); err != nil {
		return err
	}
	if len(p.Selector) > MaxRefLen {
		return invalid("selector", "selector is over %d bytes", MaxRefLen)
	}
	if p.MaxParallel < 0 || p.MaxParallel > MaxBatchJobs {
		return invalid("max_parallel", "max_parallel %d is outside 0..%d", p.MaxParallel, MaxBatchJobs)
	}
	if p.ErrorBudget < NoErrorBudget || p.ErrorBudget > MaxBatchJobs {
		return invalid("error_budget", "error_budget %d is outside -1..%d", p.ErrorBudget, MaxBatchJobs)
	}
	if len(p.Targets)+len(p.Skipped) > MaxBatchJobs {
		return invalid("targets", "a batch reaches at most %d nodes", MaxBatchJobs)
	}
	seen := make(map[string]bool, len(p.Targets)+len(p.Skipped))
	for _, t := range p.Targets {
		if err := checkID("node_id", t.NodeID); err != nil {
			return err
		}
		if len(t.WordDigest) > MaxRefLen {
			return invalid("word_digest", "word digest is over %d bytes", MaxRefLen)
		}
		if seen[t.NodeID] {
			return invalid("targets", "node %s is named twice", t.NodeID)
		}
		seen[t.NodeID] = true
	}
	for _, k := range p.Skipped {
		if err := checkID("node_id", k.NodeID); err != nil {
			return err
		}
		if seen[k.NodeID] {
			return invalid("skipped", "node %s is named twice", k.NodeID)
		}
		seen[k.NodeID] = true
		if len(k.NodeName) > MaxRefLen || len(k.Reason) > MaxMessageLen {
			return invalid("skipped", "a skipped node's name or reason is too long")
		}
	}
	return nil
}

// batchJobRow is one job of BatchJobsInsert's JSON array.
type batchJobRow struct {
	ID      string `json:"id"`
	NodeID  string `json:"node_id"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	Held    bool   `json:"held"`
}

func (s *sqlStore) BatchCreate(ctx context.Context, p BatchCreateParams) (Batch, error) {
	if err := checkBatchCreate(&p); err != nil {
		return Batch{}, err
	}
	if len(p.Targets) == 0 {
		return Batch{}, invalid("targets", "a batch needs at least one node to run on")
	}
	budget := p.Budget
	if budget == 0 {
		budget = DefaultJobBudget
	}
	budget = budget.Truncate(time.Millisecond)
	t := now(p.Now)
	b := Batch{
		ID: s.ids.next("batch_", t), Word: p.Word, Selector: p.Selector, Class: p.Class, Params: p.Params,
		MaxParallel: p.MaxParallel, ErrorBudget: p.ErrorBudget, CreatedBy: p.CreatedBy, CreatedAt: t,
	}
	var queued []string // the nodes whose job may be handed out at once, to wake
	err := s.tx(ctx, "create batch", func(ex sqldb.Execer) error {
		queued = queued[:0]
		ids := make([]string, len(p.Targets))
		want := make(map[string]string, len(p.Targets))
		for i, tg := range p.Targets {
			ids[i] = tg.NodeID
			want[tg.NodeID] = tg.WordDigest
		}
		idsJSON, _ := json.Marshal(ids)
		rs, err := ex.Query(ctx, s.q.BatchNodes, string(idsJSON))
		if err != nil {
			return err
		}
		var rows []batchJobRow
		skipped := append([]BatchSkip(nil), p.Skipped...)
		found := make(map[string]bool, len(ids))
		for rs.Next() {
			var id, name, state string
			var vocabJSON []byte
			if err := rs.Scan(&id, &name, &state, &vocabJSON); err != nil {
				rs.Close()
				return err
			}
			found[id] = true
			n := Node{ID: id, Name: name, State: NodeState(state)}
			if n.State != NodeActive {
				skipped = append(skipped, BatchSkip{NodeID: id, NodeName: name, Reason: fmt.Sprintf("the node is %s, not active", n.State)})
				continue
			}
			if err := json.Unmarshal(vocabJSON, &n.Vocabulary); err != nil {
				rs.Close()
				return err
			}
			w, ok := n.Word(p.Word)
			switch {
			case !ok:
				skipped = append(skipped, BatchSkip{NodeID: id, NodeName: name, Reason: "the node does not report the word " + p.Word})
				continue
			case want[id] != "" && w.Digest != want[id]:
				skipped = append(skipped, BatchSkip{NodeID: id, NodeName: name, Reason: "the node now reports " + p.Word + " with digest " + w.Digest})
				continue
			}
			held := p.MaxParallel > 0 && len(rows) >= p.MaxParallel
			rows = append(rows, batchJobRow{ID: s.ids.next("job_", t), NodeID: id, Version: w.Version, Digest: w.Digest, Held: held})
			if !held {
				queued = append(queued, id)
			}
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			if !found[id] {
				return errcode.New(errcode.NodeNotFound, "no node %s", id).With(errcode.DetailNodeID, id)
			}
		}
		if len(rows) == 0 {
			return errcode.New(errcode.JobWordUnavailable, "none of the %d nodes reports the word %s any more; nothing was created", len(ids), p.Word).
				With(errcode.DetailWord, p.Word)
		}
		b.Jobs, b.Skipped = len(rows), len(skipped)
		if _, err := ex.Exec(ctx, s.q.BatchInsert, b.ID, b.Word, b.Selector, b.Class, string(b.Params), int64(b.MaxParallel),
			int64(b.ErrorBudget), int64(b.Jobs), b.CreatedBy, t); err != nil {
			return err
		}
		rowsJSON, _ := json.Marshal(rows)
		if _, err := ex.Exec(ctx, s.q.BatchJobsInsert, string(rowsJSON), p.Word, p.Class, string(p.Params), budget.Milliseconds(),
			p.CreatedBy, t, b.ID); err != nil {
			return err
		}
		if len(skipped) > 0 {
			skipsJSON, _ := json.Marshal(skipped)
			if _, err := ex.Exec(ctx, s.q.BatchSkipsInsert, b.ID, string(skipsJSON)); err != nil {
				return err
			}
		}
		if len(queued) == 0 {
			return nil
		}
		return s.drv.JobQueued(ctx, ex, queued...)
	})
	if err != nil {
		return Batch{}, err
	}
	for _, id := range queued {
		s.drv.JobCommitted(id)
	}
	return b, nil
}

func (s *sqlStore) BatchGet(ctx context.Context, p BatchGetParams) (Batch, error) {
	if err := checkID("id", p.ID); err != nil {
		return Batch{}, err
	}
	var b Batch
	err := s.read(ctx, "get batch", func(ex sqldb.Execer) error {
		var err error
		if b, err = s.batchRow(ex.QueryRow(ctx, s.q.BatchGet, p.ID), p.ID); err != nil {
			return err
		}
		b.Counts, err = s.batchCounts(ctx, ex, p.ID)
		return err
	})
	return b, err
}

func (s *sqlStore) batchRow(r sqldb.Row, id string) (Batch, error) {
	b, err := scanBatch(r)
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return Batch{}, errcode.New(errcode.JobBatchNotFound, "no batch %s", id).With(errcode.DetailID, id)
	}
	return b, err
}

func (s *sqlStore) batchCounts(ctx context.Context, ex sqldb.Execer, id string) (BatchCounts, error) {
	var c BatchCounts
	rs, err := ex.Query(ctx, s.q.BatchCounts, id)
	if err != nil {
		return c, err
	}
	defer rs.Close()
	for rs.Next() {
		var state string
		var held bool
		var n int64
		if err := rs.Scan(&state, &held, &n); err != nil {
			return c, err
		}
		switch JobState(state) {
		case JobQueued:
			if held {
				c.Waiting += int(n)
			} else {
				c.Queued += int(n)
			}
		case JobRunning:
			c.Running += int(n)
		case JobCompleted:
			c.Completed += int(n)
		case JobFailed:
			c.Failed += int(n)
		case JobRefused:
			c.Refused += int(n)
		case JobLost:
			c.Lost += int(n)
		case JobCancelled:
			c.Cancelled += int(n)
		}
	}
	return c, rs.Err()
}

func scanBatch(r sqldb.Row) (Batch, error) {
	var b Batch
	var params []byte
	var maxParallel, budget, jobs, skipped int64
	if err := r.Scan(&b.ID, &b.Word, &b.Selector, &b.Class, &params, &maxParallel, &budget, &jobs, &b.CreatedBy,
		stamp{&b.CreatedAt}, stamp{&b.StoppedAt}, &b.StopReason, &skipped); err != nil {
		return Batch{}, err
	}
	b.Params = json.RawMessage(params)
	b.MaxParallel, b.ErrorBudget, b.Jobs, b.Skipped = int(maxParallel), int(budget), int(jobs), int(skipped)
	return b, nil
}

func (s *sqlStore) BatchList(ctx context.Context, p BatchListParams) (BatchListResult, error) {
	if err := checkCursor(p.Cursor); err != nil {
		return BatchListResult{}, err
	}
	limit, err := listLimit(p.Limit)
	if err != nil {
		return BatchListResult{}, err
	}
	var res BatchListResult
	err = s.read(ctx, "list batches", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.BatchList, p.Cursor, int64(limit+1))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			b, err := scanBatch(rs)
			if err != nil {
				return err
			}
			res.Batches = append(res.Batches, b)
		}
		return rs.Err()
	})
	if len(res.Batches) > limit {
		res.Batches = res.Batches[:limit]
		res.NextCursor = res.Batches[limit-1].ID
	}
	return res, err
}

func (s *sqlStore) BatchJobList(ctx context.Context, p BatchJobListParams) (BatchJobListResult, error) {
	if err := checkID("id", p.ID); err != nil {
		return BatchJobListResult{}, err
	}
	switch JobState(p.State) {
	case "", "waiting", JobQueued, JobRunning, JobCompleted, JobFailed, JobRefused, JobLost, JobCancelled:
	default:
		return BatchJobListResult{}, invalid("state", "unknown job state %q", p.State)
	}
	if p.Like != "" {
		if err := checkID("like", p.Like); err != nil {
			return BatchJobListResult{}, err
		}
	}
	if err := checkCursor(p.Cursor); err != nil {
		return BatchJobListResult{}, err
	}
	limit, err := listLimit(p.Limit)
	if err != nil {
		return BatchJobListResult{}, err
	}
	var res BatchJobListResult
	err = s.read(ctx, "list batch jobs", func(ex sqldb.Execer) error {
		if _, err := s.batchRow(ex.QueryRow(ctx, s.q.BatchGet, p.ID), p.ID); err != nil {
			return err
		}
		rs, err := ex.Query(ctx, s.q.BatchJobList, p.ID, p.State, p.Like, p.Cursor, int64(limit+1))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var bj BatchJob
			j := &bj.Job
			var params, output, audit []byte
			var state string
			var budgetMS int64
			if err := rs.Scan(&j.ID, &j.NodeID, &j.Word, &j.WordVersion, &j.WordDigest, &j.Class, &params, &state,
				&budgetMS, &j.CreatedBy, stamp{&j.CreatedAt}, stamp{&j.ClaimedAt}, stamp{&j.DeadlineAt},
				stamp{&j.FinishedAt}, &j.OutcomeCode, &j.OutcomeMessage, &output, &j.Transcript, &audit,
				&j.DurationMS, &j.FinishedBy, &j.BatchID, &bj.NodeName, &bj.Held); err != nil {
				return err
			}
			j.State, j.Budget, j.Params = JobState(state), time.Duration(budgetMS)*time.Millisecond, json.RawMessage(params)
			if output != nil {
				j.Output = json.RawMessage(output)
			}
			res.Jobs = append(res.Jobs, bj)
		}
		return rs.Err()
	})
	if len(res.Jobs) > limit {
		res.Jobs = res.Jobs[:limit]
		res.NextCursor = res.Jobs[limit-1].ID
	}
	return res, err
}

func (s *sqlStore) BatchGroupList(ctx context.Context, p BatchGroupListParams) ([]BatchGroup, error) {
	if err := checkID("id", p.ID); err != nil {
		return nil, err
	}
	limit, err := listLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	var out []BatchGroup
	err = s.read(ctx, "list batch groups", func(ex sqldb.Execer) error {
		if _, err := s.batchRow(ex.QueryRow(ctx, s.q.BatchGet, p.ID), p.ID); err != nil {
			return err
		}
		rs, err := ex.Query(ctx, s.q.BatchGroups, p.ID, int64(limit))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var g BatchGroup
			var state string
			var output *string
			var n int64
			if err := rs.Scan(&state, &g.Code, &output, &n, &g.Like); err != nil {
				return err
			}
			g.State, g.Count = JobState(state), int(n)
			if output != nil {
				g.Output = json.RawMessage(*output)
			}
			out = append(out, g)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) BatchSkipList(ctx context.Context, p BatchSkipListParams) (BatchSkipListResult, error) {
	if err := checkID("id", p.ID); err != nil {
		return BatchSkipListResult{}, err
	}
	if err := checkCursor(p.Cursor); err != nil {
		return BatchSkipListResult{}, err
	}
	limit, err := listLimit(p.Limit)
	if err != nil {
		return BatchSkipListResult{}, err
	}
	var res BatchSkipListResult
	err = s.read(ctx, "list batch skips", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.BatchSkipList, p.ID, p.Cursor, int64(limit+1))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var k BatchSkip
			if err := rs.Scan(&k.NodeID, &k.NodeName, &k.Reason); err != nil {
				return err
			}
			res.Skips = append(res.Skips, k)
		}
		return rs.Err()
	})
	if len(res.Skips) > limit {
		res.Skips = res.Skips[:limit]
		res.NextCursor = res.Skips[limit-1].NodeID
	}
	return res, err
}

func (s *sqlStore) BatchStalledList(ctx context.Context, p BatchStalledListParams) ([]string, error) {
	limit, err := listLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = s.read(ctx, "list stalled batches", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.BatchStalledList, limit)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var id string
			if err := rs.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rs.Err()
	})
	return ids, err
}

// BatchAdvance holds the batch's row while it decides, so that advances after two results ending at
// once see each other's releases. A batch with neither a bound nor a budget has nothing to decide.
func (s *sqlStore) BatchAdvance(ctx context.Context, p BatchAdvanceParams) (BatchAdvanceResult, error) {
	var res BatchAdvanceResult
	if err := checkID("id", p.ID); err != nil {
		return res, err
	}
	t := now(p.Now)
	err := s.tx(ctx, "advance batch", func(ex sqldb.Execer) error {
		res = BatchAdvanceResult{}
		b, err := s.batchRow(ex.QueryRow(ctx, s.q.BatchLock, p.ID), p.ID)
		if err != nil {
			return err
		}
		res.Batch = b
		if !b.StoppedAt.IsZero() || (b.MaxParallel == 0 && b.ErrorBudget == NoErrorBudget) {
			return nil
		}
		if b.ErrorBudget != NoErrorBudget {
			var failures int64
			if err := ex.QueryRow(ctx, s.q.BatchFailures, b.ID, int64(b.ErrorBudget+1)).Scan(&failures); err != nil {
				return err
			}
			if int(failures) > b.ErrorBudget {
				reason := fmt.Sprintf("more than %d of its jobs failed (its error budget): the jobs still queued were cancelled", b.ErrorBudget)
				if _, err := ex.Exec(ctx, s.q.BatchStop, b.ID, t, reason); err != nil {
					return err
				}
				res.Cancelled, err = s.jobs(ctx, ex, s.q.BatchCancelQueued, b.ID, t, errcode.JobBatchStopped,
					"cancelled: the batch stopped when its failures passed its error budget", "batch")
				res.Batch.StoppedAt, res.Batch.StopReason, res.Stopped = t, reason, true
				return err
			}
		}
		if b.MaxParallel == 0 {
			return nil
		}
		var active int64
		if err := ex.QueryRow(ctx, s.q.BatchActive, b.ID).Scan(&active); err != nil {
			return err
		}
		free := int64(b.MaxParallel) - active
		if free <= 0 {
			return nil
		}
		res.Released, err = s.jobs(ctx, ex, s.q.BatchRelease, b.ID, free)
		if err != nil {
			return err
		}
		if len(res.Released) == 0 {
			return nil
		}
		nodes := make([]string, len(res.Released))
		for i, j := range res.Released {
			nodes[i] = j.NodeID
		}
		return s.drv.JobQueued(ctx, ex, nodes...)
	})
	if err != nil {
		return BatchAdvanceResult{}, err
	}
	for _, j := range res.Released {
		s.drv.JobCommitted(j.NodeID)
	}
	return res, nil
}
