// Package sqldb is the contract between the store's rules (package store) and a database: what a
// dialect's driver runs, how its errors sort, where its SQL files live, and the in-memory fan-out of
// wake-ups both dialects share. It imports nothing of package store, so that store can open either
// dialect without a dialect importing store back.
package sqldb

import (
	"context"
	"net/url"
)

// Execer runs SQL, in or out of a transaction. Arguments are time.Time, string, []byte, int64, bool or
// nil; the driver converts what its database needs.
type Execer interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Rows is the result of Query.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the result of QueryRow.
type Row interface {
	Scan(dest ...any) error
}

// Notifier is the wake-up side of a driver; store.Notifier has the same method set.
type Notifier interface {
	Subscribe(nodeID string) (wake <-chan struct{}, stop func())
}

// Driver is what a database contributes.
type Driver interface {
	Execer // reads, outside any transaction
	// Writer runs one write statement in a transaction of its own (autocommit), for writes that need
	// no rule around them (NonceUse): one round trip instead of three.
	Writer() Execer

	// Tx runs fn in a write transaction, committing if fn returns nil. Write transactions on one
	// store are serialised where the database needs it (SQLite); on PostgreSQL they run at READ
	// COMMITTED and the SQL takes the row locks.
	Tx(ctx context.Context, fn func(Execer) error) error
	// Pipeline runs steps in one write transaction without waiting for each result before sending the
	// next (PostgreSQL: BEGIN, the steps and COMMIT go in one round trip). The COMMIT is sent with
	// them, so a step cannot veto it: use Pipeline only where every step's effect stands whatever the
	// results. A database error stops it, and nothing commits.
	Pipeline(ctx context.Context, steps []Step) error
	// JobQueued runs inside the transaction that queued jobs for nodeIDs, so that every replica hears
	// of it when (and only if) it commits.
	JobQueued(ctx context.Context, ex Execer, nodeIDs ...string) error
	// JobCommitted runs after that transaction committed.
	JobCommitted(nodeID string)
	Notifier() Notifier
	// Kind sorts a database error into what the rules branch on.
	Kind(err error) ErrKind
	Ping(ctx context.Context) error
	Close() error
}

// Preparer is a driver that prepares statements only when told which: the store gives it its hot
// statements once migrations have run. PostgreSQL needs none: pgx prepares every statement on first
// use on each connection and keeps it (its default exec mode, a statement cache per connection).
type Preparer interface {
	Prepare(ctx context.Context, queries []string) error
}

// Step is one statement of a pipeline; Scan reads its row, or is nil to discard what it returns.
type Step struct {
	Query string
	Args  []any
	Scan  func(Row) error
}

// ErrKind is what the rules need to know of a database error.
type ErrKind int

const (
	ErrOther ErrKind = iota
	ErrNoRows
	ErrUnique
	ErrBusy // lock timeout, deadlock or serialization failure: nothing changed, retry may succeed
)

// RedactURL drops the password from a database URL so that it can appear in an error.
func RedactURL(raw string) string {
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

type handOutKey struct{}

// HandOut marks ctx as the hand-out that follows a wake-up: a job was queued for a node whose long
// poll is waiting, and the claim that gives it out is the dispatch latency. A driver with a pool runs
// such a pipeline on connections of its own, so that it never queues behind the claims, nonces and
// key lookups of a fleet renewing its long polls.
func HandOut(ctx context.Context) context.Context { return context.WithValue(ctx, handOutKey{}, true) }

// IsHandOut reports whether ctx was marked by HandOut.
func IsHandOut(ctx context.Context) bool { v, _ := ctx.Value(handOutKey{}).(bool); return v }
