package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// sqlStore is the one implementation of Store: every rule is written here once, against a driver that
// runs its database's SQL. PostgreSQL and SQLite differ in their drivers and their .sql files only.
type sqlStore struct {
	drv    driver
	q      *queries
	ids    idSource
	closed atomic.Bool
}

// execer runs SQL, in or out of a transaction. Arguments are time.Time, string, []byte, int64, bool or
// nil; the driver converts what its database needs.
type execer interface {
	exec(ctx context.Context, query string, args ...any) (int64, error)
	query(ctx context.Context, query string, args ...any) (rows, error)
	queryRow(ctx context.Context, query string, args ...any) row
}

type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

type row interface {
	Scan(dest ...any) error
}

// driver is what a database contributes.
type driver interface {
	execer // reads, outside any transaction
	// writer runs one write statement in a transaction of its own (autocommit), for writes that need
	// no rule around them (NonceUse): one round trip instead of three.
	writer() execer

	// tx runs fn in a write transaction, committing if fn returns nil. Write transactions on one
	// store are serialised where the database needs it (SQLite); on PostgreSQL they run at READ
	// COMMITTED and the SQL takes the row locks.
	tx(ctx context.Context, fn func(execer) error) error
	// pipeline runs steps in one write transaction without waiting for each result before sending the
	// next (PostgreSQL: BEGIN, the steps and COMMIT go in one round trip). The COMMIT is sent with
	// them, so a step cannot veto it: use pipeline only where every step's effect stands whatever the
	// results. A database error stops it, and nothing commits.
	pipeline(ctx context.Context, steps []step) error
	// jobQueued runs inside the transaction that queued a job for nodeID, so that every replica hears
	// of it when (and only if) it commits.
	jobQueued(ctx context.Context, ex execer, nodeID string) error
	// jobCommitted runs after that transaction committed.
	jobCommitted(nodeID string)
	notifier() Notifier
	// kind sorts a database error into what the rules branch on.
	kind(err error) errKind
	ping(ctx context.Context) error
	close() error
}

// step is one statement of a pipeline; scan reads its row, or is nil to discard what it returns.
type step struct {
	query string
	args  []any
	scan  func(row) error
}

type errKind int

const (
	errOther errKind = iota
	errNoRows
	errUnique
	errBusy // lock timeout, deadlock or serialization failure: nothing changed, retry may succeed
)

func newSQLStore(ctx context.Context, drv driver, q *queries, migrations []migration) (*sqlStore, error) {
	s := &sqlStore{drv: drv, q: q}
	if err := s.migrate(ctx, migrations); err != nil {
		_ = drv.close()
		return nil, err
	}
	return s, nil
}

func (s *sqlStore) Notifier() Notifier { return s.drv.notifier() }

func (s *sqlStore) Ping(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.drv.ping(ctx); err != nil {
		return s.fail(err, "ping")
	}
	return nil
}

func (s *sqlStore) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.drv.close()
}

func (s *sqlStore) usable() error {
	if s.closed.Load() {
		return errcode.New(errcode.StoreClosed, "the store is closed")
	}
	return nil
}

// tx runs fn in a write transaction. Errors fn returns pass through with their codes; others become
// store.unavailable or store.busy.
func (s *sqlStore) tx(ctx context.Context, what string, fn func(execer) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.drv.tx(ctx, fn); err != nil {
		return s.fail(err, what)
	}
	return nil
}

// pipeline runs steps (empty queries are left out) in one write transaction; see driver.pipeline.
func (s *sqlStore) pipeline(ctx context.Context, what string, steps ...step) error {
	if err := s.usable(); err != nil {
		return err
	}
	run := steps[:0:0]
	for _, st := range steps {
		if st.query != "" {
			run = append(run, st)
		}
	}
	if err := s.drv.pipeline(ctx, run); err != nil {
		return s.fail(err, what)
	}
	return nil
}

// read runs fn against the read side of the store.
func (s *sqlStore) read(ctx context.Context, what string, fn func(execer) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := fn(s.drv); err != nil {
		return s.fail(err, what)
	}
	return nil
}

// write runs fn against the write side outside a transaction: each statement commits on its own, so
// fn runs one statement that needs no rule around it.
func (s *sqlStore) write(ctx context.Context, what string, fn func(execer) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := fn(s.drv.writer()); err != nil {
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
	if s.drv.kind(err) == errBusy {
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

func invalid(field, format string, args ...any) error {
	return errcode.New(errcode.StoreParamInvalid, format, args...).With(errcode.DetailField, field)
}

// redactURL drops the password from a database URL so that it can appear in an error.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable url)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	return u.String()
}

// Limits of list methods.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

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
		return DefaultListLimit, nil
	case n < 0 || n > MaxListLimit:
		return 0, invalid("limit", "limit %d is outside 1..%d", n, MaxListLimit)
	}
	return n, nil
}

var _ Store = (*sqlStore)(nil)
