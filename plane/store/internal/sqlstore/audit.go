package sqlstore

import (
	"context"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// auditForever stands for "no upper bound" of an audit list's time filter: both databases hold it.
var auditForever = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

func checkAuditText(field, v string, need bool) error {
	if need && v == "" {
		return invalid(field, "an audit event names its %s", field)
	}
	if len(v) > MaxRefLen {
		return invalid(field, "%s is over %d bytes", field, MaxRefLen)
	}
	return nil
}

func (s *sqlStore) AuditEventStart(ctx context.Context, p AuditEventStartParams) (AuditEvent, error) {
	if p.Via != AuditViaAPI && p.Via != AuditViaUI {
		return AuditEvent{}, invalid("via", "an audit event is asked through %q or %q", AuditViaAPI, AuditViaUI)
	}
	for _, f := range []struct {
		name, v string
		need    bool
	}{{"actor_id", p.ActorID, false}, {"actor", p.Actor, false}, {"address", p.Address, false},
		{"operation", p.Operation, true}, {"target", p.Target, false}} {
		if err := checkAuditText(f.name, f.v, f.need); err != nil {
			return AuditEvent{}, err
		}
	}
	if err := s.usable(); err != nil {
		return AuditEvent{}, err
	}
	t := now(p.Now)
	e := AuditEvent{ID: s.ids.next("audit_", t), At: t, Via: p.Via, ActorID: p.ActorID, Actor: p.Actor, Address: p.Address,
		Operation: p.Operation, Target: p.Target, Code: CodePending}
	// Autocommit: one insert needs no rule around it, and every change writes one.
	_, err := s.drv.Writer().Exec(ctx, s.q.AuditEventInsert, e.ID, e.At, e.Via, e.ActorID, e.Actor, e.Address, e.Operation,
		e.Target, int64(e.Status), e.Code, e.DurationMS)
	if err != nil {
		return AuditEvent{}, s.fail(err, "record audit event")
	}
	return e, nil
}

func (s *sqlStore) AuditEventFinish(ctx context.Context, p AuditEventFinishParams) (AuditEvent, error) {
	if p.ID == "" || len(p.ID) > MaxRefLen {
		return AuditEvent{}, invalid("id", "a finished event names the started one")
	}
	if p.Code == "" || len(p.Code) > MaxRefLen || p.Code == CodePending {
		return AuditEvent{}, invalid("code", "an outcome is ok or an error code of 1 to %d bytes", MaxRefLen)
	}
	if p.Status < 100 || p.Status > 599 {
		return AuditEvent{}, invalid("status", "status %d is not an HTTP status", p.Status)
	}
	if p.Duration < 0 {
		return AuditEvent{}, invalid("duration", "duration is negative")
	}
	for _, f := range []struct{ name, v string }{{"actor_id", p.ActorID}, {"actor", p.Actor}, {"target", p.Target}} {
		if err := checkAuditText(f.name, f.v, false); err != nil {
			return AuditEvent{}, err
		}
	}
	if err := s.usable(); err != nil {
		return AuditEvent{}, err
	}
	var e AuditEvent
	var status int64
	// Autocommit, as AuditEventStart: the conditional update is its own rule.
	err := s.drv.Writer().QueryRow(ctx, s.q.AuditEventFinish, p.ID, int64(p.Status), p.Code, p.Duration.Milliseconds(),
		p.ActorID, p.Actor, p.Target, CodePending).
		Scan(&e.ID, stamp{&e.At}, &e.Via, &e.ActorID, &e.Actor, &e.Address, &e.Operation, &e.Target, &status, &e.Code, &e.DurationMS)
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return AuditEvent{}, invalid("id", "no pending audit event %s", p.ID)
	}
	if err != nil {
		return AuditEvent{}, s.fail(err, "finish audit event")
	}
	e.Status = int(status)
	return e, nil
}

func (s *sqlStore) AuditEventList(ctx context.Context, p AuditEventListParams) (AuditEventListResult, error) {
	limit, err := listLimit(p.Limit)
	if err != nil {
		return AuditEventListResult{}, err
	}
	if err := checkCursor(p.Cursor); err != nil {
		return AuditEventListResult{}, err
	}
	for _, f := range []struct{ name, v string }{{"actor", p.Actor}, {"operation", p.Operation}, {"target", p.Target},
		{"outcome", p.Outcome}} {
		if err := checkAuditText(f.name, f.v, false); err != nil {
			return AuditEventListResult{}, err
		}
	}
	since, until := time.Unix(0, 0).UTC(), auditForever
	if !p.Since.IsZero() {
		since = p.Since.UTC()
	}
	if !p.Until.IsZero() {
		until = p.Until.UTC()
	}
	if !until.After(since) {
		return AuditEventListResult{}, invalid("until", "until is not after since")
	}
	res := AuditEventListResult{Events: []AuditEvent{}}
	err = s.read(ctx, "list audit events", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.AuditEventList, p.Actor, p.Operation, p.Target, p.Outcome, since, until, p.Cursor, int64(limit+1))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var e AuditEvent
			var status int64
			if err := rs.Scan(&e.ID, stamp{&e.At}, &e.Via, &e.ActorID, &e.Actor, &e.Address, &e.Operation, &e.Target, &status,
				&e.Code, &e.DurationMS); err != nil {
				return err
			}
			e.Status = int(status)
			res.Events = append(res.Events, e)
		}
		return rs.Err()
	})
	if err != nil {
		return AuditEventListResult{}, err
	}
	if len(res.Events) > limit {
		res.Events = res.Events[:limit]
		res.NextCursor = res.Events[limit-1].ID
	}
	return res, nil
}

// pruneLimit checks a prune's parameters and gives its batch size.
func pruneLimit(p PruneParams) (int64, error) {
	if p.Before.IsZero() {
		return 0, invalid("before", "a prune names the age it removes before")
	}
	limit := p.Limit
	if limit == 0 {
		limit = 10000
	}
	if limit < 0 || limit > 100000 {
		return 0, invalid("limit", "limit %d is outside 1..100000", limit)
	}
	return int64(limit), nil
}

// prune runs a retention statement: the rows older than p.Before, at most p.Limit of them.
func (s *sqlStore) prune(ctx context.Context, q, what string, p PruneParams) (int64, error) {
	limit, err := pruneLimit(p)
	if err != nil {
		return 0, err
	}
	if err := s.usable(); err != nil {
		return 0, err
	}
	n, err := s.drv.Writer().Exec(ctx, q, p.Before.UTC(), limit)
	if err != nil {
		return 0, s.fail(err, "prune "+what)
	}
	return n, nil
}

func (s *sqlStore) AuditEventPrune(ctx context.Context, p PruneParams) (int64, error) {
	return s.prune(ctx, s.q.AuditEventPrune, "audit events", p)
}

func (s *sqlStore) DriverCallPrune(ctx context.Context, p PruneParams) (int64, error) {
	return s.prune(ctx, s.q.DriverCallPrune, "driver calls", p)
}

// JobPrune's statement leaves out the jobs a batch, a rollout step or a backup record names: those
// records outlive their jobs' rows only by keeping them (see RATIONALE.md, retention).
func (s *sqlStore) JobPrune(ctx context.Context, p PruneParams) (int64, error) {
	return s.prune(ctx, s.q.JobPrune, "jobs", p)
}

// BatchPrune removes the batches whose jobs all ended before p.Before with their jobs and skips, in one
// transaction, children first. No lock is needed: a job that has ended never opens again, so a batch
// past its age stays past it.
func (s *sqlStore) BatchPrune(ctx context.Context, p PruneParams) (int64, error) {
	limit, err := pruneLimit(p)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.tx(ctx, "prune batches", func(ex sqldb.Execer) error {
		before := p.Before.UTC()
		for _, q := range []string{s.q.BatchPruneJobs, s.q.BatchPruneSkips} {
			if _, err := ex.Exec(ctx, q, before, limit); err != nil {
				return err
			}
		}
		n, err = ex.Exec(ctx, s.q.BatchPrune, before, limit)
		return err
	})
	return n, err
}

// IncidentPrune removes a batch of settled incidents with their events (notes among them),
// notifications and delivery attempts in one transaction, children first, after locking the batch so
// that an incident reopened meanwhile is neither half-removed nor removed.
func (s *sqlStore) IncidentPrune(ctx context.Context, p PruneParams) (int64, error) {
	limit, err := pruneLimit(p)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.tx(ctx, "prune incidents", func(ex sqldb.Execer) error {
		before := p.Before.UTC()
		for _, q := range []string{s.q.IncidentPruneLock, s.q.IncidentPruneAttempts, s.q.IncidentPruneNotifications, s.q.IncidentPruneEvents} {
			if _, err := ex.Exec(ctx, q, before, limit); err != nil {
				return err
			}
		}
		n, err = ex.Exec(ctx, s.q.IncidentPrune, before, limit)
		return err
	})
	return n, err
}
