// Package store keeps the plane's state (joins, nodes, nonces, jobs, tokens, releases, cases, incidents
// and their notifications) behind one
// interface, on PostgreSQL for fleets served by several plane replicas or on embedded SQLite for one box.
//
//	s, err := store.Open(ctx, "postgres://postgres@127.0.0.1:5432/lexicon") // or a file path
//	if err != nil { ... }
//	defer s.Close()
//	wake, stop := s.Notifier().Subscribe(nodeID)
//	defer stop()
//	job, err := s.JobClaim(ctx, store.JobClaimParams{NodeID: nodeID})
//	if job == nil { <-wake } // a job was queued for nodeID, claim again
//
// Every method is NounVerb(ctx, NounVerbParams). Every error carries a code from sdk/errcode: the area
// codes (join., node., job., token., release.) name the rule that refused, and a refused operation changed
// nothing. Times are UTC with microsecond precision; a zero Now in params means the store's clock. Ids are
// opaque strings that sort by creation.
//
// The rules live once, in this package; each database contributes only its driver and its SQL
// (sql/postgres, sql/sqlite), and the suite in plane/store/storetest holds both to the same behaviour.
package store

import (
	"context"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/postgres"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqlite"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is the plane's whole state.
type Store interface {
	JoinStore
	NodeStore
	NonceStore
	JobStore
	TokenStore
	ReleaseStore
	DriverStore
	CaseStore
	IncidentStore
	NotificationStore

	// Notifier returns the wake-ups for jobs queued by any replica sharing this database.
	Notifier() Notifier
	// MigrationList returns the schema migrations applied to the database, oldest first.
	MigrationList(ctx context.Context) ([]Migration, error)
	// Ping reports whether the database answers (store.unavailable if not).
	Ping(ctx context.Context) error
	// Close stops the listener and closes every connection. Waiters are released.
	Close() error
}

// Notifier wakes long polls when a job is queued for their node. It is separate from Store because a
// plane process holds one listener and fans it out to thousands of waiters in memory.
type Notifier interface {
	// Subscribe returns a channel that receives a value each time a job is queued for nodeID (values
	// coalesce: one pending wake-up stands for any number of jobs), and a function that unsubscribes.
	// Subscribe before claiming, so that a job queued between the claim and the wait is not missed.
	// After the listener loses its connection every subscriber is woken, since queued jobs may have
	// been missed while it was down.
	Subscribe(nodeID string) (wake <-chan struct{}, stop func())
}

// Open opens the store named by url and brings its schema up to date. A url starting with postgres://
// or postgresql:// opens PostgreSQL (libpq-style parameters such as search_path and pool_max_conns pass
// through); sqlite://PATH or a bare file path opens SQLite.
func Open(ctx context.Context, url string) (Store, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return OpenPostgres(ctx, url)
	case strings.HasPrefix(url, "sqlite://"):
		return OpenSQLite(ctx, strings.TrimPrefix(url, "sqlite://"))
	case strings.Contains(url, "://"):
		return nil, errcode.New(errcode.StoreURLInvalid, "store url %q: unknown scheme (want postgres:// or sqlite://)", sqldb.RedactURL(url))
	case url == "":
		return nil, errcode.New(errcode.StoreURLInvalid, "store url is empty")
	default:
		return OpenSQLite(ctx, url)
	}
}

// OpenPostgres opens the store on the PostgreSQL database at url and migrates it. Tables live in the
// first schema of the search_path, which url may set (postgres://...?search_path=plane); pool_max_conns
// sets the pool's size (16 by default).
func OpenPostgres(ctx context.Context, url string) (Store, error) {
	return openSQL(ctx, postgres.Files, func() (sqldb.Driver, error) { return postgres.Open(ctx, url) })
}

// OpenSQLite opens (creating if needed, with mode 0600) the store in the SQLite file at path and
// migrates it.
func OpenSQLite(ctx context.Context, path string) (Store, error) {
	return openSQL(ctx, sqlite.Files, func() (sqldb.Driver, error) { return sqlite.Open(ctx, path) })
}
