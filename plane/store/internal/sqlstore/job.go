package sqlstore

import (
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// validClass: a word class is one manifest.Class ranks (look, change, destructive).
func validClass(c string) bool { return manifest.Class(c).Rank() > 0 }

func checkJSON(field string, b json.RawMessage, object bool) error {
	if !json.Valid(b) || !utf8.Valid(b) {
		return invalid(field, "%s is not valid JSON in UTF-8", field)
	}
	if object {
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil || m == nil {
			return invalid(field, "%s must be a JSON object", field)
		}
	}
	return nil
}

func checkJobCreate(p *JobCreateParams) error {
	if err := checkID("node_id", p.NodeID); err != nil {
		return err
	}
	if p.Word == "" || len(p.Word) > MaxRefLen {
		return invalid("word", "word must be 1 to %d bytes", MaxRefLen)
	}
	if len(p.WordDigest) > MaxRefLen {
		return invalid("word_digest", "word digest is over %d bytes", MaxRefLen)
	}
	if !validClass(p.Class) {
		return invalid("class", "class %q is not look, change or destructive", p.Class)
	}
	if err := checkJSON("params", p.Params, true); err != nil {
		return err
	}
	if p.Budget < 0 || p.Budget > MaxJobBudget || (p.Budget > 0 && p.Budget < time.Millisecond) {
		return invalid("budget", "budget %s is outside [1ms, %s]", p.Budget, MaxJobBudget)
	}
	if p.CreatedBy == "" || len(p.CreatedBy) > maxActorLen {
		return invalid("created_by", "created_by must be 1 to %d bytes", maxActorLen)
	}
	return nil
}

func (s *sqlStore) JobCreate(ctx context.Context, p JobCreateParams) (Job, error) {
	if err := checkJobCreate(&p); err != nil {
		return Job{}, err
	}
	budget := p.Budget
	if budget == 0 {
		budget = DefaultJobBudget
	}
	budget = budget.Truncate(time.Millisecond)
	t := now(p.Now)
	if p.Backup != nil {
		if err := checkBackupJob(*p.Backup); err != nil {
			return Job{}, err
		}
	}
	var j Job
	err := s.tx(ctx, "create job", func(ex sqldb.Execer) error {
		var state string
		var vocabJSON []byte
		err := ex.QueryRow(ctx, s.q.NodeLockShared, p.NodeID).Scan(&state, &vocabJSON)
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.NodeNotFound, "no node %s", p.NodeID).With(errcode.DetailNodeID, p.NodeID)
		}
		if err != nil {
			return err
		}
		n := Node{ID: p.NodeID, State: NodeState(state)}
		if err := active(n); err != nil {
			return err
		}
		if err := json.Unmarshal(vocabJSON, &n.Vocabulary); err != nil {
			return err
		}
		w, ok := n.Word(p.Word)
		if !ok {
			return errcode.New(errcode.JobWordUnavailable,
				"node %s does not report word %s; publish a release that contains it and wait for the node to load it, or pick a node that reports it",
				p.NodeID, p.Word).With(errcode.DetailWord, p.Word).With(errcode.DetailNodeID, p.NodeID)
		}
		if p.WordDigest != "" && w.Digest != p.WordDigest {
			return errcode.New(errcode.JobWordUnavailable,
				"node %s now reports word %s with digest %s, not %s; build the job again", p.NodeID, p.Word, w.Digest, p.WordDigest).
				With(errcode.DetailWord, p.Word).With(errcode.DetailNodeID, p.NodeID).With(errcode.DetailDigest, w.Digest)
		}
		j = Job{
			ID: s.ids.next("job_", t), NodeID: p.NodeID, Word: p.Word, WordVersion: w.Version,
			WordDigest: w.Digest, Class: p.Class, Params: p.Params, State: JobQueued, Budget: budget,
			CreatedBy: p.CreatedBy, CreatedAt: t,
		}
		if _, err := ex.Exec(ctx, s.q.JobInsert, j.ID, j.NodeID, j.Word, j.WordVersion, j.WordDigest, j.Class,
			string(j.Params), j.Budget.Milliseconds(), j.CreatedBy, j.CreatedAt); err != nil {
			return err
		}
		if b := p.Backup; b != nil {
			chain, _ := json.Marshal(nonNil(b.Chain))
			if _, err := ex.Exec(ctx, s.q.BackupJobInsert, j.ID, j.NodeID, string(b.Purpose), b.Target, b.Run, b.Parent, string(chain),
				b.Objects, j.CreatedAt); err != nil {
				return err
			}
		}
		return s.drv.JobQueued(ctx, ex, j.NodeID)
	})
	if err != nil {
		return Job{}, err
	}
	s.drv.JobCommitted(j.NodeID)
	return j, nil
}

func (s *sqlStore) JobClaim(ctx context.Context, p JobClaimParams) (*Job, error) {
	// A claim that does not lose is the look after a wake-up: a job was just queued for the node.
	res, err := s.claim(sqldb.HandOut(ctx), p, false)
	return res.Job, err
}

func (s *sqlStore) JobClaimIdle(ctx context.Context, p JobClaimParams) (JobClaimIdleResult, error) {
	return s.claim(ctx, p, true)
}

// lostIdle is why an idle claim's running job is lost.
const lostIdle = "the node claimed while idle, so the job is no longer running there"

// claim is every claim: JobClaimLose and JobClaimLock (an idle node's running job lost; the node's
// state; its row lock, taken only if it has a queued job), then JobClaim, in one transaction and one
// round trip. A claim with nothing to hand out neither locks nor writes.
func (s *sqlStore) claim(ctx context.Context, p JobClaimParams, idle bool) (JobClaimIdleResult, error) {
	var res JobClaimIdleResult
	if err := checkID("node_id", p.NodeID); err != nil {
		return res, err
	}
	t := now(p.Now)
	lost := func(id, word, batch *string) {
		if id != nil && word != nil {
			j := Job{ID: *id, NodeID: p.NodeID, Word: *word, State: JobLost}
			if batch != nil {
				j.BatchID = *batch
			}
			res.Lost = append(res.Lost, j)
		}
	}
	var state string
	found := false
	loseArgs := func() []any { return []any{p.NodeID, t, idle, errcode.JobLost, lostIdle} }
	err := s.pipeline(ctx, "claim job",
		sqldb.Step{Query: s.q.JobClaimLose, Args: loseArgs(), Scan: func(r sqldb.Row) error {
			var id, word, batch string
			err := r.Scan(&id, &word, &batch)
			if s.drv.Kind(err) == sqldb.ErrNoRows {
				return nil
			}
			if err == nil {
				lost(&id, &word, &batch)
			}
			return err
		}},
		sqldb.Step{Query: s.q.JobClaimLock, Args: loseArgs(), Scan: func(r sqldb.Row) error {
			var id, word, batch *string
			var locked bool
			err := r.Scan(&state, &id, &word, &locked, &batch)
			if s.drv.Kind(err) == sqldb.ErrNoRows {
				return nil
			}
			if err == nil {
				found = true
				lost(id, word, batch)
			}
			return err
		}},
		sqldb.Step{Query: s.q.JobClaim, Args: []any{p.NodeID, t, ""}, Scan: s.scanClaimed(p.NodeID, &res.Job)})
	if err != nil {
		return JobClaimIdleResult{}, err
	}
	if !found {
		return JobClaimIdleResult{}, errcode.New(errcode.NodeNotFound, "no node %s", p.NodeID).With(errcode.DetailNodeID, p.NodeID)
	}
	if err := active(Node{ID: p.NodeID, State: NodeState(state)}); err != nil {
		return JobClaimIdleResult{}, err
	}
	return res, nil
}

// scanClaimed reads what JobClaim handed out into *claimed.
func (s *sqlStore) scanClaimed(nodeID string, claimed **Job) func(sqldb.Row) error {
	return func(r sqldb.Row) error {
		j, err := scanJob(r)
		switch s.drv.Kind(err) {
		case sqldb.ErrNoRows:
			return nil
		case sqldb.ErrUnique:
			// jobs_one_running caught what the lock should have prevented. Hand out nothing.
			return errcode.Wrap(err, errcode.StoreBusy, "node %s already has a running job", nodeID)
		}
		if err != nil {
			return err
		}
		*claimed = &j
		return nil
	}
}

func checkJobFinish(p *JobFinishParams) error {
	if err := checkID("id", p.ID); err != nil {
		return err
	}
	if err := checkID("node_id", p.NodeID); err != nil {
		return err
	}
	switch p.Outcome {
	case JobCompleted, JobFailed, JobRefused:
	default:
		return invalid("outcome", "outcome %q is not completed, failed or refused", p.Outcome)
	}
	if len(p.Code) > MaxRefLen || len(p.Message) > MaxMessageLen {
		return invalid("message", "code is at most %d bytes and message at most %d", MaxRefLen, MaxMessageLen)
	}
	if p.Output != nil {
		if err := checkJSON("output", p.Output, false); err != nil {
			return err
		}
	}
	if p.Audit != nil {
		if err := checkJSON("audit", p.Audit, false); err != nil {
			return err
		}
	}
	if p.Duration < 0 {
		return invalid("duration", "duration cannot be negative")
	}
	return nil
}

func (s *sqlStore) JobFinish(ctx context.Context, p JobFinishParams) (Job, error) {
	if err := checkJobFinish(&p); err != nil {
		return Job{}, err
	}
	t := now(p.Now)
	args := []any{p.ID, p.NodeID, string(p.Outcome), t, p.Code, p.Message, jsonText(p.Output), p.Transcript,
		jsonText(p.Audit), p.Duration.Milliseconds()}
	var j Job
	var matched bool
	finish := func(ex sqldb.Execer) error {
		var err error
		j, err = scanJob(ex.QueryRow(ctx, s.q.JobFinish, args...))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		matched = true
		if p.Outcome == JobRefused && s.q.NodeRefusalAdd != "" {
			_, err = ex.Exec(ctx, s.q.NodeRefusalAdd, p.NodeID)
		}
		return err
	}
	var err error
	if s.q.NodeRefusalAdd == "" {
		// The dialect's JobFinish counts a refusal itself (PostgreSQL): one statement, one round trip.
		err = s.write(ctx, "finish job", finish)
	} else {
		err = s.tx(ctx, "finish job", finish)
	}
	if err != nil {
		return Job{}, err
	}
	if matched {
		return j, nil
	}
	return Job{}, s.finishRefused(ctx, p)
}

// finishRefused says why a result matched no running job: nothing changed.
func (s *sqlStore) finishRefused(ctx context.Context, p JobFinishParams) error {
	return s.read(ctx, "finish job", func(ex sqldb.Execer) error {
		cur, err := s.jobGet(ctx, ex, p.ID)
		if err != nil || cur.NodeID != p.NodeID {
			return errcode.New(errcode.JobNotFound, "node %s has no job %s", p.NodeID, p.ID).With(errcode.DetailID, p.ID)
		}
		return errcode.New(errcode.JobNotRunning, "job %s is %s, not running; its result is dropped", p.ID, cur.State).
			With(errcode.DetailID, p.ID).With(errcode.DetailState, string(cur.State))
	})
}

// JobFinishClaim is JobFinishClaim (JobFinish, with the node's lock when it has a queued job) and
// JobFinishRefusal, then JobClaim, in one transaction and one round trip. The claim hands out nothing
// unless the result was recorded in this transaction, so every step's effect stands whatever the
// results, as a pipeline needs.
func (s *sqlStore) JobFinishClaim(ctx context.Context, p JobFinishParams) (JobFinishClaimResult, error) {
	var res JobFinishClaimResult
	if err := checkJobFinish(&p); err != nil {
		return res, err
	}
	t := now(p.Now)
	matched := false
	refusal := "" // only a refusal is counted: other outcomes skip the statement (SQLite's; PostgreSQL has none)
	if p.Outcome == JobRefused {
		refusal = s.q.JobFinishRefusal
	}
	args := []any{p.ID, p.NodeID, string(p.Outcome), t, p.Code, p.Message, jsonText(p.Output), p.Transcript, jsonText(p.Audit), p.Duration.Milliseconds()}
	// The nonce: its own first step (SQLite), or folded into JobFinishClaim (PostgreSQL, whose
	// JobFinishNonce is empty and whose JobFinishClaim always takes it, null for none).
	var nonce sqldb.Step
	if n := p.Nonce; n != nil {
		if err := checkNonce(*n, t); err != nil {
			return res, err
		}
		if s.q.JobFinishNonce != "" {
			nonce = sqldb.Step{Query: s.q.JobFinishNonce, Args: []any{n.KeyID, n.Nonce, now(n.ExpiresAt)}}
		} else {
			args = append(args, n.KeyID, n.Nonce, now(n.ExpiresAt))
		}
	} else if s.q.JobFinishNonce == "" {
		args = append(args, nil, nil, nil)
	}
	// The node seen: its own step after the result (SQLite), or folded into JobFinishClaim
	// (PostgreSQL, whose JobFinishSeen is empty and whose JobFinishClaim always takes the flag).
	seen := sqldb.Step{}
	if s.q.JobFinishSeen != "" {
		if p.Seen {
			seen = sqldb.Step{Query: s.q.JobFinishSeen, Args: []any{p.NodeID, t}}
		}
	} else {
		args = append(args, p.Seen)
	}
	err := s.pipeline(ctx, "finish job", nonce,
		sqldb.Step{Query: s.q.JobFinishClaim, Args: args, Scan: func(r sqldb.Row) error {
			var err error
			res.Job, err = scanJob(r)
			if s.drv.Kind(err) == sqldb.ErrNoRows {
				return nil
			}
			matched = err == nil
			return err
		}},
		sqldb.Step{Query: refusal, Args: []any{p.ID, p.NodeID, string(p.Outcome), t}},
		seen,
		sqldb.Step{Query: s.q.JobClaim, Args: []any{p.NodeID, t, p.ID}, Scan: s.scanClaimed(p.NodeID, &res.Next)})
	if err != nil && p.Nonce != nil && s.drv.Kind(err) == sqldb.ErrUnique {
		// Most likely the nonce: recording it again tells (a live row is a replay). A fresh one is
		// recorded now, which the request, refused with the original error, has used up anyway.
		fresh, nerr := s.NonceUse(ctx, *p.Nonce)
		if nerr == nil && !fresh {
			return JobFinishClaimResult{Replayed: true}, nil
		}
	}
	if err != nil {
		return JobFinishClaimResult{}, err
	}
	if !matched {
		return JobFinishClaimResult{}, s.finishRefused(ctx, p)
	}
	return res, nil
}

func (s *sqlStore) JobLoseRunning(ctx context.Context, p JobLoseRunningParams) ([]Job, error) {
	if err := checkID("node_id", p.NodeID); err != nil {
		return nil, err
	}
	// One statement, so one autocommit round trip: it runs on every idle claim, and mostly changes
	// nothing.
	return s.writeJobs(ctx, "lose running job", s.q.JobLoseRunning, p.NodeID, now(p.Now), errcode.JobLost,
		"the node claimed while idle, so the job is no longer running there")
}

func (s *sqlStore) JobExpire(ctx context.Context, p JobExpireParams) ([]Job, error) {
	return s.writeJobs(ctx, "expire jobs", s.q.JobExpire, now(p.Now), errcode.JobLost,
		"the job ran past its claim budget")
}

// writeJobs runs one statement that changes jobs and returns them, in a transaction of its own.
func (s *sqlStore) writeJobs(ctx context.Context, what, query string, args ...any) ([]Job, error) {
	var out []Job
	err := s.write(ctx, what, func(ex sqldb.Execer) error {
		var err error
		out, err = s.jobs(ctx, ex, query, args...)
		return err
	})
	return out, err
}

func (s *sqlStore) JobCancel(ctx context.Context, p JobCancelParams) (Job, error) {
	return s.jobEnd(ctx, "cancel job", s.q.JobCancel, p.ID, p.By, p.Now, errcode.JobCancelled, "cancelled by an operator",
		func(cur Job) error {
			return errcode.New(errcode.JobNotQueued, "job %s is %s; only a queued job can be cancelled", cur.ID, cur.State).
				With(errcode.DetailID, cur.ID).With(errcode.DetailState, string(cur.State))
		})
}

func (s *sqlStore) JobMarkFailed(ctx context.Context, p JobMarkFailedParams) (Job, error) {
	if len(p.Message) > MaxMessageLen {
		return Job{}, invalid("message", "message is over %d bytes", MaxMessageLen)
	}
	msg := p.Message
	if msg == "" {
		msg = "marked failed by an operator"
	}
	return s.jobEnd(ctx, "mark job failed", s.q.JobMarkFailed, p.ID, p.By, p.Now, errcode.JobMarkedFailed, msg,
		func(cur Job) error {
			return errcode.New(errcode.JobFinished, "job %s is already %s", cur.ID, cur.State).
				With(errcode.DetailID, cur.ID).With(errcode.DetailState, string(cur.State))
		})
}

// jobEnd runs an operator's update of one job, explaining with refuse why it matched no row.
func (s *sqlStore) jobEnd(ctx context.Context, what, query, id, by string, at time.Time, code, msg string,
	refuse func(Job) error) (Job, error) {
	if err := checkID("id", id); err != nil {
		return Job{}, err
	}
	if err := checkActor(by); err != nil {
		return Job{}, err
	}
	var j Job
	err := s.tx(ctx, what, func(ex sqldb.Execer) error {
		var err error
		j, err = scanJob(ex.QueryRow(ctx, query, id, now(at), code, msg, by))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			cur, err := s.jobGet(ctx, ex, id)
			if err != nil {
				return err
			}
			return refuse(cur)
		}
		return err
	})
	return j, err
}

func (s *sqlStore) JobGet(ctx context.Context, p JobGetParams) (Job, error) {
	if err := checkID("id", p.ID); err != nil {
		return Job{}, err
	}
	var j Job
	err := s.read(ctx, "get job", func(ex sqldb.Execer) error {
		var err error
		j, err = s.jobGet(ctx, ex, p.ID)
		return err
	})
	return j, err
}

func (s *sqlStore) jobGet(ctx context.Context, ex sqldb.Execer, id string) (Job, error) {
	j, err := scanJob(ex.QueryRow(ctx, s.q.JobGet, id))
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return Job{}, errcode.New(errcode.JobNotFound, "no job %s", id).With(errcode.DetailID, id)
	}
	return j, err
}

func (s *sqlStore) JobList(ctx context.Context, p JobListParams) (JobListResult, error) {
	switch p.State {
	case "", JobQueued, JobRunning, JobCompleted, JobFailed, JobRefused, JobLost, JobCancelled:
	default:
		return JobListResult{}, invalid("state", "unknown job state %q", p.State)
	}
	if err := checkCursor(p.Cursor); err != nil {
		return JobListResult{}, err
	}
	limit, err := listLimit(p.Limit)
	if err != nil {
		return JobListResult{}, err
	}
	var res JobListResult
	err = s.read(ctx, "list jobs", func(ex sqldb.Execer) error {
		var err error
		res.Jobs, err = s.jobs(ctx, ex, s.q.JobList, p.NodeID, string(p.State), p.Cursor, int64(limit+1))
		return err
	})
	if len(res.Jobs) > limit {
		res.Jobs = res.Jobs[:limit]
		res.NextCursor = res.Jobs[limit-1].ID
	}
	return res, err
}

// jobs runs a query that returns job rows.
func (s *sqlStore) jobs(ctx context.Context, ex sqldb.Execer, query string, args ...any) ([]Job, error) {
	rs, err := ex.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Job
	for rs.Next() {
		j, err := scanJob(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rs.Err()
}

func scanJob(r sqldb.Row) (Job, error) {
	var j Job
	var params, output, audit []byte
	var state string
	var budgetMS int64
	if err := r.Scan(&j.ID, &j.NodeID, &j.Word, &j.WordVersion, &j.WordDigest, &j.Class, &params, &state,
		&budgetMS, &j.CreatedBy, stamp{&j.CreatedAt}, stamp{&j.ClaimedAt}, stamp{&j.DeadlineAt},
		stamp{&j.FinishedAt}, &j.OutcomeCode, &j.OutcomeMessage, &output, &j.Transcript, &audit,
		&j.DurationMS, &j.FinishedBy, &j.BatchID); err != nil {
		return Job{}, err
	}
	j.State = JobState(state)
	j.Budget = time.Duration(budgetMS) * time.Millisecond
	j.Params = json.RawMessage(params)
	if output != nil {
		j.Output = json.RawMessage(output)
	}
	if audit != nil {
		j.Audit = json.RawMessage(audit)
	}
	return j, nil
}
