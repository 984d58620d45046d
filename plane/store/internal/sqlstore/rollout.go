package sqlstore

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// Labels, targets, leases and rollouts: the store's side of staged rollouts.

func (s *sqlStore) NodeLabel(ctx context.Context, p NodeLabelParams) (Node, error) {
	if err := checkID("id", p.ID); err != nil {
		return Node{}, err
	}
	for k, v := range p.Set {
		if !ValidLabelKey(k) {
			return Node{}, invalid("labels", "label key %q must be 1 to 63 of a-z, 0-9, - _ . / starting with a letter", k)
		}
		if !ValidLabelValue(v) {
			return Node{}, invalid("labels", "label %s's value must be 1 to %d printable characters without spaces, ',' or '='", k, MaxLabelValue)
		}
	}
	for _, k := range p.Remove {
		if !ValidLabelKey(k) {
			return Node{}, invalid("labels", "label key %q is not a label key", k)
		}
	}
	var n Node
	err := s.tx(ctx, "label node", func(ex sqldb.Execer) error {
		var raw []byte
		err := ex.QueryRow(ctx, s.q.NodeLockLabels, p.ID).Scan(&raw)
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.NodeNotFound, "no node %s", p.ID).With(errcode.DetailNodeID, p.ID)
		}
		if err != nil {
			return err
		}
		labels := map[string]string{}
		if err := json.Unmarshal(raw, &labels); err != nil {
			return err
		}
		for _, k := range p.Remove {
			delete(labels, k)
		}
		for k, v := range p.Set {
			labels[k] = v
		}
		if len(labels) > MaxLabels {
			return errcode.New(errcode.NodeLabelInvalid, "a node carries at most %d labels", MaxLabels).With(errcode.DetailField, "labels").With(errcode.DetailMax, MaxLabels)
		}
		doc, _ := json.Marshal(labels)
		n, err = scanNode(ex.QueryRow(ctx, s.q.NodeSetLabels, p.ID, string(doc)))
		return err
	})
	return n, err
}

func (s *sqlStore) NodeTargetSet(ctx context.Context, p NodeTargetSetParams) (NodeTargetSetResult, error) {
	if err := checkID("id", p.ID); err != nil {
		return NodeTargetSetResult{}, err
	}
	var res NodeTargetSetResult
	err := s.tx(ctx, "set node target", func(ex sqldb.Execer) error {
		if err := s.releaseExists(ctx, ex, p.Sequence); err != nil {
			return err
		}
		err := ex.QueryRow(ctx, s.q.NodeTargetLock, p.ID).Scan(&res.Previous)
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.NodeNotFound, "no node %s", p.ID).With(errcode.DetailNodeID, p.ID)
		}
		if err != nil {
			return err
		}
		res.Node, err = scanNode(ex.QueryRow(ctx, s.q.NodeSetTarget, p.ID, p.Sequence))
		return err
	})
	return res, err
}

func (s *sqlStore) releaseExists(ctx context.Context, ex sqldb.Execer, seq int64) error {
	var one int64
	err := ex.QueryRow(ctx, s.q.ReleaseGet, seq).Scan(&one, new(string), new(string), stamp{new(time.Time)}, new(string), new([]byte))
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return errcode.New(errcode.ReleaseNotFound, "no release has sequence %d", seq).With(errcode.DetailSequence, seq)
	}
	return err
}

func (s *sqlStore) FleetTarget(ctx context.Context) (int64, error) {
	var seq int64
	err := s.read(ctx, "get fleet target", func(ex sqldb.Execer) error {
		return ex.QueryRow(ctx, s.q.FleetTargetGet).Scan(&seq)
	})
	return seq, err
}

func (s *sqlStore) FleetTargetSet(ctx context.Context, p FleetTargetSetParams) error {
	return s.tx(ctx, "set fleet target", func(ex sqldb.Execer) error {
		if err := s.releaseExists(ctx, ex, p.Sequence); err != nil {
			return err
		}
		_, err := ex.Exec(ctx, s.q.FleetTargetSet, p.Sequence)
		return err
	})
}

func checkLease(subject, name, holder string, ttl time.Duration) error {
	if subject == "" || len(subject) > MaxRefLen {
		return invalid("subject", "a lease needs a subject of at most %d bytes", MaxRefLen)
	}
	if name == "" || len(name) > 64 {
		return invalid("name", "a lease needs a name of at most 64 bytes")
	}
	if holder == "" || len(holder) > MaxRefLen {
		return invalid("holder", "a lease needs a holder of at most %d bytes", MaxRefLen)
	}
	if ttl <= 0 || ttl > MaxLeaseTTL {
		return invalid("ttl", "a lease lasts more than nothing and at most %s", MaxLeaseTTL)
	}
	return nil
}

func checkLeaseAcquire(p LeaseAcquireParams) error {
	if err := checkLease(p.Subject, p.Name, p.Holder, p.TTL); err != nil {
		return err
	}
	if len(p.Purpose) > MaxRefLen {
		return invalid("purpose", "purpose is over %d bytes", MaxRefLen)
	}
	return nil
}

func (s *sqlStore) LeaseAcquire(ctx context.Context, p LeaseAcquireParams) (Lease, error) {
	if err := checkLeaseAcquire(p); err != nil {
		return Lease{}, err
	}
	t := now(p.Now)
	var l Lease
	err := s.write(ctx, "acquire lease", func(ex sqldb.Execer) error {
		var err error
		l, err = s.grantLease(ctx, ex, p, t)
		if s.drv.Kind(err) != sqldb.ErrNoRows {
			return err
		}
		other, gerr := scanLease(ex.QueryRow(ctx, s.q.LeaseGet, p.Subject, p.Name))
		if gerr != nil {
			return err // released between the two statements: report the refusal as it was
		}
		return errcode.New(errcode.LeaseHeld, "lease %s on %s is held by %s (%s) until %s", p.Name, p.Subject, other.Holder, other.Purpose, other.ExpiresAt.Format(time.RFC3339)).
			With(errcode.DetailReason, other.Holder).With(errcode.DetailExpiresAt, other.ExpiresAt)
	})
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return Lease{}, errcode.New(errcode.LeaseHeld, "lease %s on %s is held by another holder", p.Name, p.Subject)
	}
	return l, err
}

// grantLease runs the one statement that grants p at t: to its holder, when the lease is free, expired,
// already the holder's or handed over from p.From; no row otherwise.
func (s *sqlStore) grantLease(ctx context.Context, ex sqldb.Execer, p LeaseAcquireParams, t time.Time) (Lease, error) {
	return scanLease(ex.QueryRow(ctx, s.q.LeaseAcquire, p.Subject, p.Name, p.Holder, p.Purpose, t, t.Add(p.TTL), p.From))
}

func (s *sqlStore) LeaseRenew(ctx context.Context, p LeaseRenewParams) (Lease, error) {
	if err := checkLease(p.Subject, p.Name, p.Holder, p.TTL); err != nil {
		return Lease{}, err
	}
	t := now(p.Now)
	var l Lease
	err := s.write(ctx, "renew lease", func(ex sqldb.Execer) error {
		var err error
		l, err = scanLease(ex.QueryRow(ctx, s.q.LeaseRenew, p.Subject, p.Name, p.Holder, t.Add(p.TTL)))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.LeaseLost, "%s no longer holds lease %s on %s", p.Holder, p.Name, p.Subject)
		}
		return err
	})
	return l, err
}

func (s *sqlStore) LeaseRelease(ctx context.Context, p LeaseReleaseParams) error {
	return s.write(ctx, "release lease", func(ex sqldb.Execer) error {
		_, err := ex.Exec(ctx, s.q.LeaseRelease, p.Subject, p.Name, p.Holder)
		return err
	})
}

func (s *sqlStore) LeaseList(ctx context.Context, p LeaseListParams) ([]Lease, error) {
	out := []Lease{}
	err := s.read(ctx, "list leases", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.LeaseList, p.Subject, p.Live, now(p.Now))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			l, err := scanLease(rs)
			if err != nil {
				return err
			}
			out = append(out, l)
		}
		return rs.Err()
	})
	return out, err
}

func scanLease(r sqldb.Row) (Lease, error) {
	var l Lease
	err := r.Scan(&l.Subject, &l.Name, &l.Holder, &l.Purpose, stamp{&l.AcquiredAt}, stamp{&l.ExpiresAt})
	return l, err
}

// Rollout defaults.
const (
	defaultStepTimeout = 10 * time.Minute
	maxRolloutNodes    = 100_000
	// maxEventDetail bounds a start event's detail: a patch names every node it left out.
	maxEventDetail = 64 << 10
)

func checkRolloutCreate(p *RolloutCreateParams) error {
	switch p.Kind {
	case RolloutRelease:
		if p.ReleaseSequence <= 0 {
			return invalid("release_sequence", "a release rollout names a release")
		}
	case RolloutJob:
		if p.Word == "" || len(p.Word) > MaxRefLen {
			return invalid("word", "a job rollout names a word")
		}
	default:
		return invalid("kind", "kind is release or job, not %q", p.Kind)
	}
	for _, j := range []struct {
		f string
		v json.RawMessage
	}{{"params", p.Params}, {"preflight_params", p.PreflightParams}, {"verify_params", p.VerifyParams}} {
		if len(j.v) == 0 {
			continue
		}
		if err := checkJSON(j.f, j.v, true); err != nil {
			return err
		}
	}
	if p.MaxParallel == 0 {
		p.MaxParallel = 1
	}
	if p.MaxParallel < 0 || p.ErrorBudget < 0 || p.StepTimeout < 0 {
		return invalid("max_parallel", "max_parallel, error_budget and step_timeout must not be negative")
	}
	if p.StepTimeout == 0 {
		p.StepTimeout = defaultStepTimeout
	}
	if len(p.Steps) == 0 || len(p.Steps) > maxRolloutNodes {
		return invalid("steps", "a rollout has 1 to %d nodes", maxRolloutNodes)
	}
	if len(p.Selector) > 4096 {
		return invalid("selector", "selector is over 4096 bytes")
	}
	if p.Purpose != PurposeNone && (p.Purpose != PurposePatch || p.Kind != RolloutJob) {
		return invalid("purpose", "purpose is patch, for a job rollout, or none; not %q", p.Purpose)
	}
	if len(p.Detail) > maxEventDetail {
		return invalid("detail", "the start's detail is over %d bytes", maxEventDetail)
	}
	seen := map[string]bool{}
	for _, st := range p.Steps {
		if err := checkID("steps", st.NodeID); err != nil {
			return err
		}
		if len(st.Machine) > MaxRefLen {
			return invalid("steps", "node %s's machine is over %d bytes", st.NodeID, MaxRefLen)
		}
		if seen[st.NodeID] {
			return invalid("steps", "node %s is in the rollout twice", st.NodeID)
		}
		if st.Params != nil && (p.Kind != RolloutJob || len(st.Params) > MaxRoleSpec || !json.Valid(st.Params)) {
			return invalid("steps", "a node's own params are one JSON value of at most %d bytes, for a job rollout", MaxRoleSpec)
		}
		seen[st.NodeID] = true
	}
	return checkActor(p.By)
}

func (s *sqlStore) RolloutCreate(ctx context.Context, p RolloutCreateParams) (Rollout, error) {
	if err := checkRolloutCreate(&p); err != nil {
		return Rollout{}, err
	}
	t := now(p.Now)
	id := s.ids.next("ro_", t)
	if p.Lease.Holder != "" {
		p.Lease.Subject = id
		if err := checkLeaseAcquire(p.Lease); err != nil {
			return Rollout{}, err
		}
	}
	stages, _ := json.Marshal(nonNil(p.Stages))
	err := s.tx(ctx, "create rollout", func(ex sqldb.Execer) error {
		if _, err := ex.Exec(ctx, s.q.RolloutInsert, id, string(p.Kind), p.ReleaseSequence, p.Word, jsonText(p.Params),
			p.PreflightWord, jsonText(p.PreflightParams), p.VerifyWord, jsonText(p.VerifyParams), p.Selector, string(stages),
			p.FleetWide, int64(p.MaxParallel), int64(p.ErrorBudget), p.StepTimeout.Milliseconds(), p.By, t, string(p.Purpose)); err != nil {
			return err
		}
		pos := map[int]int{}
		for _, st := range p.Steps {
			if _, err := ex.Exec(ctx, s.q.RolloutStepInsert, id, st.NodeID, st.NodeName, int64(st.Stage), int64(pos[st.Stage]), st.Machine); err != nil {
				return err
			}
			if st.Params != nil {
				if _, err := ex.Exec(ctx, s.q.RolloutStepParamsInsert, id, st.NodeID, string(st.Params)); err != nil {
					return err
				}
			}
			pos[st.Stage]++
		}
		if _, err := ex.Exec(ctx, s.q.RolloutEventInsert, id, t, p.By, "start", p.Detail); err != nil {
			return err
		}
		if p.Lease.Holder != "" {
			_, err := s.grantLease(ctx, ex, p.Lease, t)
			return err
		}
		return nil
	})
	if err != nil {
		return Rollout{}, err
	}
	return s.RolloutGet(ctx, RolloutGetParams{ID: id})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *sqlStore) RolloutGet(ctx context.Context, p RolloutGetParams) (Rollout, error) {
	if err := checkID("id", p.ID); err != nil {
		return Rollout{}, err
	}
	var ro Rollout
	err := s.read(ctx, "get rollout", func(ex sqldb.Execer) error {
		var err error
		ro, err = scanRollout(ex.QueryRow(ctx, s.q.RolloutGet, p.ID))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.RolloutNotFound, "no rollout %s", p.ID).With(errcode.DetailID, p.ID)
		}
		if err != nil {
			return err
		}
		if ro.Steps, err = s.rolloutSteps(ctx, ex, p.ID); err != nil {
			return err
		}
		rs, err := ex.Query(ctx, s.q.RolloutEvents, p.ID)
		if err != nil {
			return err
		}
		defer rs.Close()
		ro.Events = []RolloutEvent{}
		for rs.Next() {
			var e RolloutEvent
			if err := rs.Scan(stamp{&e.At}, &e.Actor, &e.Action, &e.Detail); err != nil {
				return err
			}
			ro.Events = append(ro.Events, e)
		}
		return rs.Err()
	})
	return ro, err
}

func (s *sqlStore) rolloutSteps(ctx context.Context, ex sqldb.Execer, id string) ([]RolloutStep, error) {
	rs, err := ex.Query(ctx, s.q.RolloutSteps, id)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := []RolloutStep{}
	for rs.Next() {
		st, err := scanStep(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rs.Err()
}

func (s *sqlStore) RolloutList(ctx context.Context, p RolloutListParams) ([]Rollout, error) {
	limit, err := listLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	out := []Rollout{}
	err = s.read(ctx, "list rollouts", func(ex sqldb.Execer) error {
		q, args := s.q.RolloutList, []any{string(p.State), int64(limit)}
		if p.Judging {
			q, args = s.q.RolloutListJudging, []any{int64(limit)}
		}
		rs, err := ex.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			ro, err := scanRollout(rs)
			if err != nil {
				return err
			}
			out = append(out, ro)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) RolloutSetState(ctx context.Context, p RolloutSetStateParams) (Rollout, error) {
	if err := checkID("id", p.ID); err != nil {
		return Rollout{}, err
	}
	if err := checkActor(p.By); err != nil {
		return Rollout{}, err
	}
	t := now(p.Now)
	from, _ := json.Marshal(p.From)
	err := s.tx(ctx, "change rollout", func(ex sqldb.Execer) error {
		before, err := scanRollout(ex.QueryRow(ctx, s.q.RolloutGet, p.ID))
		if err != nil && s.drv.Kind(err) != sqldb.ErrNoRows {
			return err
		}
		_, err = scanRollout(ex.QueryRow(ctx, s.q.RolloutSetState, p.ID, string(p.To), string(from), t))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			cur, gerr := scanRollout(ex.QueryRow(ctx, s.q.RolloutGet, p.ID))
			if s.drv.Kind(gerr) == sqldb.ErrNoRows {
				return errcode.New(errcode.RolloutNotFound, "no rollout %s", p.ID).With(errcode.DetailID, p.ID)
			}
			if gerr != nil {
				return gerr
			}
			return errcode.New(errcode.RolloutWrongState, "rollout %s is %s; %s needs it %v", p.ID, cur.State, p.Action, p.From).
				With(errcode.DetailState, string(cur.State))
		}
		if err != nil {
			return err
		}
		if p.To == RolloutRunning && before.State == RolloutHalted {
			if _, err := ex.Exec(ctx, s.q.RolloutStepsRetry, p.ID); err != nil {
				return err
			}
		}
		if p.To == RolloutAborted {
			if _, err := ex.Exec(ctx, s.q.RolloutStepsSkip, p.ID, t); err != nil {
				return err
			}
		}
		_, err = ex.Exec(ctx, s.q.RolloutEventInsert, p.ID, t, p.By, p.Action, p.Detail)
		return err
	})
	if err != nil {
		return Rollout{}, err
	}
	return s.RolloutGet(ctx, RolloutGetParams{ID: p.ID})
}

func (s *sqlStore) RolloutStepUpdate(ctx context.Context, p RolloutStepUpdateParams) (RolloutStepUpdateResult, error) {
	if err := checkID("rollout_id", p.RolloutID); err != nil {
		return RolloutStepUpdateResult{}, err
	}
	reason, _ := cutText(p.Reason, MaxMessageLen)
	var res RolloutStepUpdateResult
	err := s.write(ctx, "update rollout step", func(ex sqldb.Execer) error {
		st, err := scanStep(ex.QueryRow(ctx, s.q.RolloutStepUpdate, p.RolloutID, p.NodeID, string(p.FromState), p.FromPhase,
			string(p.State), p.Phase, p.JobID, p.PreviousTarget, reason, now(p.Now)))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			res.Step, err = scanStep(ex.QueryRow(ctx, s.q.RolloutStepGet, p.RolloutID, p.NodeID))
			return err
		}
		res.Step, res.Moved = st, err == nil
		return err
	})
	return res, err
}

func (s *sqlStore) RolloutMiss(ctx context.Context, p RolloutMissParams) (Rollout, error) {
	if err := checkID("id", p.ID); err != nil {
		return Rollout{}, err
	}
	reason, _ := cutText(p.Reason, MaxMessageLen)
	t := now(p.Now)
	err := s.tx(ctx, "count rollout miss", func(ex sqldb.Execer) error {
		before, err := scanRollout(ex.QueryRow(ctx, s.q.RolloutGet, p.ID))
		if err != nil && s.drv.Kind(err) != sqldb.ErrNoRows {
			return err
		}
		ro, err := scanRollout(ex.QueryRow(ctx, s.q.RolloutMiss, p.ID, p.NodeName, reason, t))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.RolloutWrongState, "rollout %s is %s: it counts no misses", p.ID, before.State).
				With(errcode.DetailState, string(before.State))
		}
		if err != nil {
			return err
		}
		action := "miss"
		if ro.State == RolloutHalted && before.State != RolloutHalted {
			action = "halt"
		}
		_, err = ex.Exec(ctx, s.q.RolloutEventInsert, p.ID, t, "plane", action, p.NodeName+": "+reason)
		return err
	})
	if err != nil {
		return Rollout{}, err
	}
	return s.RolloutGet(ctx, RolloutGetParams{ID: p.ID})
}

func scanRollout(r sqldb.Row) (Rollout, error) {
	var ro Rollout
	var kind, state, purpose string
	var params, pre, ver, stages []byte
	var maxPar, budget, misses, timeoutMS int64
	if err := r.Scan(&ro.ID, &kind, &ro.ReleaseSequence, &ro.Word, &params, &ro.PreflightWord, &pre, &ro.VerifyWord, &ver,
		&ro.Selector, &stages, &ro.FleetWide, &maxPar, &budget, &timeoutMS, &state, &misses, &ro.HaltNode, &ro.HaltReason,
		&ro.CreatedBy, stamp{&ro.CreatedAt}, stamp{&ro.UpdatedAt}, stamp{&ro.FinishedAt}, &purpose); err != nil {
		return Rollout{}, err
	}
	ro.Kind, ro.State, ro.Purpose = RolloutKind(kind), RolloutState(state), RolloutPurpose(purpose)
	ro.MaxParallel, ro.ErrorBudget, ro.Misses = int(maxPar), int(budget), int(misses)
	ro.StepTimeout = time.Duration(timeoutMS) * time.Millisecond
	ro.Params, ro.PreflightParams, ro.VerifyParams = rawOrNil(params), rawOrNil(pre), rawOrNil(ver)
	if err := json.Unmarshal(stages, &ro.Stages); err != nil {
		return Rollout{}, err
	}
	return ro, nil
}

func rawOrNil(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(append([]byte(nil), b...))
}

func scanStep(r sqldb.Row) (RolloutStep, error) {
	var st RolloutStep
	var state string
	var stage, pos int64
	if err := r.Scan(&st.NodeID, &st.NodeName, &stage, &pos, &state, &st.Phase, &st.JobID, &st.PreviousTarget, &st.Reason,
		stamp{&st.StartedAt}, stamp{&st.PhaseAt}, stamp{&st.FinishedAt}, &st.Machine); err != nil {
		return RolloutStep{}, err
	}
	st.State, st.Stage, st.Position = StepState(state), int(stage), int(pos)
	return st, nil
}

// cutText bounds a reason the plane composed from what nodes said: cut on a character boundary and
// made valid text, so that no database refuses it.
func cutText(s string, n int) (string, bool) {
	cut := false
	if len(s) > n {
		s, cut = s[:n], true
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	return s, cut
}

func (s *sqlStore) RolloutParamsGet(ctx context.Context, p RolloutParamsGetParams) (json.RawMessage, error) {
	if err := checkID("rollout_id", p.RolloutID); err != nil {
		return nil, err
	}
	if err := checkID("node_id", p.NodeID); err != nil {
		return nil, err
	}
	var out []byte
	err := s.read(ctx, "get rollout step params", func(ex sqldb.Execer) error {
		err := ex.QueryRow(ctx, s.q.RolloutStepParamsGet, p.RolloutID, p.NodeID).Scan(&out)
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			out = nil
			return nil
		}
		return err
	})
	return out, err
}
