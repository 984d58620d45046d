package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// sqlStore is the one implementation of Store: every rule is written here once, against a driver that
// runs its database's SQL. PostgreSQL and SQLite differ in their drivers and their .sql files only
// (plane/store/internal/postgres, plane/store/internal/sqlite).
type sqlStore struct {
	drv    sqldb.Driver
	q      *sqldb.Queries
	ms     []sqldb.Migration // this binary's migrations, for MigrationCheck
	ids    idSource
	closed atomic.Bool
	counts sqldb.Counts
}

// Open loads a dialect's SQL, opens its driver and migrates the database. The SQL is loaded first:
// a binary whose files do not load never connects. With an Observer, every statement after the
// migrations is timed for it.
func Open(ctx context.Context, files fs.FS, open func() (sqldb.Driver, error), obs Observer) (Store, error) {
	q, ms, err := sqldb.Load(files)
	if err != nil {
		return nil, err
	}
	drv, err := open()
	if err != nil {
		return nil, err
	}
	s := &sqlStore{drv: drv, q: q, ms: ms}
	if err := s.migrate(ctx, ms); err != nil {
		_ = drv.Close()
		return nil, err
	}
	if p, ok := drv.(sqldb.Preparer); ok {
		if err := p.Prepare(ctx, s.hot()); err != nil {
			_ = drv.Close()
			return nil, errcode.Wrap(err, errcode.StoreUnavailable, "prepare statements")
		}
	}
	if obs != nil {
		s.drv = observe(drv, q, obs)
	}
	return s, nil
}

// hot are the statements of a job round trip and of a long poll: what the plane runs most.
func (s *sqlStore) hot() []string {
	q := s.q
	return []string{q.NodeGetByKey, q.NonceUse, q.NodeReport, q.NodeSeen, q.RelaxCommit, q.JobClaimLose, q.JobClaimLock,
		q.JobClaim, q.JobFinish, q.JobFinishClaim, q.JobFinishRefusal, q.JobFinishNonce, q.JobFinishSeen, q.NodeRefusalAdd, q.JobGet, q.JobInsert,
		q.NodeLockShared, q.CaseList}
}

func (s *sqlStore) Notifier() Notifier { return s.drv.Notifier() }

// Statements counts what the store has sent its database since it opened; see store.Counter.
func (s *sqlStore) Statements() StatementCounts {
	st, tx := s.counts.Load()
	return StatementCounts{Statements: st, Transactions: tx}
}

func (s *sqlStore) Ping(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.drv.Ping(ctx); err != nil {
		return s.fail(err, "ping")
	}
	return nil
}

func (s *sqlStore) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.drv.Close()
}

func (s *sqlStore) usable() error {
	if s.closed.Load() {
		return errcode.New(errcode.StoreClosed, "the store is closed")
	}
	return nil
}

// tx runs fn in a write transaction. Errors fn returns pass through with their codes; others become
// store.unavailable or store.busy.
func (s *sqlStore) tx(ctx context.Context, what string, fn func(sqldb.Execer) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.counts.AddTransaction()
	if err := s.drv.Tx(ctx, func(ex sqldb.Execer) error { return fn(s.counts.Count(ex)) }); err != nil {
		return s.fail(err, what)
	}
	return nil
}

// pipeline runs steps (empty queries are left out) in one write transaction; see sqldb.Driver.Pipeline.
func (s *sqlStore) pipeline(ctx context.Context, what string, steps ...sqldb.Step) error {
	if err := s.usable(); err != nil {
		return err
	}
	run := steps[:0:0]
	for _, st := range steps {
		if st.Query != "" {
			run = append(run, st)
		}
	}
	s.counts.AddTransaction()
	s.counts.AddStatements(len(run))
	if err := s.drv.Pipeline(ctx, run); err != nil {
		return s.fail(err, what)
	}
	return nil
}

// read runs fn against the read side of the store.
func (s *sqlStore) read(ctx context.Context, what string, fn func(sqldb.Execer) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := fn(s.counts.Count(s.drv)); err != nil {
		return s.fail(err, what)
	}
	return nil
}

// write runs fn against the write side outside a transaction: each statement commits on its own, so
// fn runs one statement that needs no rule around it.
func (s *sqlStore) write(ctx context.Context, what string, fn func(sqldb.Execer) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := fn(s.counts.Count(s.drv.Writer())); err != nil {
		return s.fail(err, what)
	}
	return nil
}

// fail gives an uncoded database error its store code; coded errors pass through.
func (s *sqlStore) fail(err error, what string) error {
	var coded *errcode.Error
	if errors.As(err, &coded) {
		return err
	}
	if s.drv.Kind(err) == sqldb.ErrBusy {
		return errcode.Wrap(err, errcode.StoreBusy, "%s: the database is busy; nothing changed", what)
	}
	return errcode.Wrap(err, errcode.StoreUnavailable, "%s", what)
}

// now returns t, or the clock when t is zero, in UTC at the microsecond precision both databases keep.
func now(t time.Time) time.Time {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Truncate(time.Microsecond)
}

// at returns t for a nullable column: nil when t is zero.
func at(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond)
}

// stamp scans a timestamp however the database returns it: a time (PostgreSQL), microseconds since the
// epoch (SQLite), or NULL (the zero time).
type stamp struct{ t *time.Time }

func (d stamp) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*d.t = time.Time{}
	case time.Time:
		*d.t = x.UTC()
	case int64:
		*d.t = time.UnixMicro(x).UTC()
	default:
		return fmt.Errorf("timestamp column holds %T", v)
	}
	return nil
}

var _ sql.Scanner = stamp{}

// jsonText returns b as the text of a JSON column, or nil for a NULL one.
func jsonText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// defaultListLimit is a list call's page when it names none (store.MaxListLimit is the most).
const defaultListLimit = 100

// checkCursor refuses a cursor no list could have returned.
func checkCursor(c string) error {
	if len(c) > 64 {
		return invalid("cursor", "cursor is not one a list returned")
	}
	return nil
}

func listLimit(n int) (int, error) {
	switch {
	case n == 0:
		return defaultListLimit, nil
	case n < 0 || n > MaxListLimit:
		return 0, invalid("limit", "limit %d is outside 1..%d", n, MaxListLimit)
	}
	return n, nil
}

var (
	_ Store   = (*sqlStore)(nil)
	_ Counter = (*sqlStore)(nil)
)

func invalid(field, format string, args ...any) error {
	return errcode.New(errcode.StoreParamInvalid, format, args...).With(errcode.DetailField, field)
}
