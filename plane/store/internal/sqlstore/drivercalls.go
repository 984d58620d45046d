package sqlstore

import (
	"context"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

func checkDriverCallAdd(p *DriverCallAddParams) error {
	if p.Actor == "" {
		return invalid("actor", "an audit record names who asked")
	}
	if err := checkActor(p.Actor); err != nil {
		return err
	}
	if p.Account != "" {
		if err := checkAccountName(p.Account); err != nil {
			return err
		}
	}
	if err := checkDriverName("driver", p.Driver); err != nil {
		return err
	}
	if p.Operation == "" || len(p.Operation) > MaxRefLen {
		return invalid("operation", "operation must be 1 to %d bytes", MaxRefLen)
	}
	if len(p.Target) > MaxRefLen {
		return invalid("target", "target is over %d bytes", MaxRefLen)
	}
	if p.Code == "" || len(p.Code) > MaxRefLen {
		return invalid("code", "code must be 1 to %d bytes", MaxRefLen)
	}
	if p.Duration < 0 {
		return invalid("duration", "duration is negative")
	}
	return nil
}

func (s *sqlStore) DriverCallAdd(ctx context.Context, p DriverCallAddParams) (DriverCall, error) {
	if err := checkDriverCallAdd(&p); err != nil {
		return DriverCall{}, err
	}
	if err := s.usable(); err != nil {
		return DriverCall{}, err
	}
	t := now(p.Now)
	c := DriverCall{ID: s.ids.next("call_", t), At: t, Actor: p.Actor, Account: p.Account, Driver: p.Driver,
		Operation: p.Operation, Target: p.Target, Code: p.Code, DurationMS: p.Duration.Milliseconds()}
	// Autocommit: one insert needs no rule around it, and the audit log is written on every call.
	_, err := s.drv.Writer().Exec(ctx, s.q.DriverCallInsert, c.ID, c.At, c.Actor, c.Account, c.Driver, c.Operation,
		c.Target, c.Code, c.DurationMS)
	if err != nil {
		return DriverCall{}, s.fail(err, "record driver call")
	}
	return c, nil
}

func (s *sqlStore) DriverCallStart(ctx context.Context, p DriverCallStartParams) (DriverCall, error) {
	return s.DriverCallAdd(ctx, DriverCallAddParams{Actor: p.Actor, Account: p.Account, Driver: p.Driver,
		Operation: p.Operation, Target: p.Target, Code: CodePending, Now: p.Now})
}

func (s *sqlStore) DriverCallFinish(ctx context.Context, p DriverCallFinishParams) (DriverCall, error) {
	if p.ID == "" || len(p.ID) > MaxRefLen {
		return DriverCall{}, invalid("id", "a finished call names the started one")
	}
	if p.Code == "" || len(p.Code) > MaxRefLen || p.Code == CodePending {
		return DriverCall{}, invalid("code", "an outcome is ok or an error code of 1 to %d bytes", MaxRefLen)
	}
	if p.Duration < 0 {
		return DriverCall{}, invalid("duration", "duration is negative")
	}
	if err := s.usable(); err != nil {
		return DriverCall{}, err
	}
	var c DriverCall
	// Autocommit, as DriverCallAdd: the conditional update is its own rule.
	err := s.drv.Writer().QueryRow(ctx, s.q.DriverCallFinish, p.ID, p.Code, p.Duration.Milliseconds(), CodePending).
		Scan(&c.ID, stamp{&c.At}, &c.Actor, &c.Account, &c.Driver, &c.Operation, &c.Target, &c.Code, &c.DurationMS)
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return DriverCall{}, invalid("id", "no pending driver call %s", p.ID)
	}
	if err != nil {
		return DriverCall{}, s.fail(err, "finish driver call")
	}
	return c, nil
}

func (s *sqlStore) DriverCallList(ctx context.Context, p DriverCallListParams) (DriverCallListResult, error) {
	limit, err := listLimit(p.Limit)
	if err != nil {
		return DriverCallListResult{}, err
	}
	if err := checkCursor(p.Cursor); err != nil {
		return DriverCallListResult{}, err
	}
	res := DriverCallListResult{Calls: []DriverCall{}}
	err = s.read(ctx, "list driver calls", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.DriverCallList, p.Driver, p.Account, p.Cursor, int64(limit+1))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var c DriverCall
			if err := rs.Scan(&c.ID, stamp{&c.At}, &c.Actor, &c.Account, &c.Driver, &c.Operation, &c.Target, &c.Code,
				&c.DurationMS); err != nil {
				return err
			}
			res.Calls = append(res.Calls, c)
		}
		return rs.Err()
	})
	if err != nil {
		return DriverCallListResult{}, err
	}
	if len(res.Calls) > limit {
		res.Calls = res.Calls[:limit]
		res.NextCursor = res.Calls[limit-1].ID
	}
	return res, nil
}
