// Package open makes a store.Store: it is the only way in to the SQL implementation and its two
// dialects, which live under plane/store/internal. Callers hold the store.Store interface it returns
// and import package store for the params and rows; only the code that picks the database imports
// this package.
//
//	s, err := open.URL(ctx, "postgres://postgres@127.0.0.1:5432/lexicon") // or a file path
//	if err != nil { ... }
//	defer s.Close()
package open

import (
	"context"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/postgres"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqlite"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqlstore"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// URL opens the store named by url and brings its schema up to date. A url starting with postgres://
// or postgresql:// opens PostgreSQL (libpq-style parameters such as search_path and pool_max_conns pass
// through); sqlite://PATH or a bare file path opens SQLite.
func URL(ctx context.Context, url string, opts ...Option) (store.Store, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return Postgres(ctx, url, opts...)
	case strings.HasPrefix(url, "sqlite://"):
		return SQLite(ctx, strings.TrimPrefix(url, "sqlite://"), opts...)
	case strings.Contains(url, "://"):
		return nil, errcode.New(errcode.StoreURLInvalid, "store url %q: unknown scheme (want postgres:// or sqlite://)", sqldb.RedactURL(url))
	case url == "":
		return nil, errcode.New(errcode.StoreURLInvalid, "store url is empty")
	default:
		return SQLite(ctx, url, opts...)
	}
}

// Option tunes an opened store.
type Option func(*options)

type options struct{ obs store.Observer }

// WithObserver times every statement the store runs for obs (the plane's metrics).
func WithObserver(obs store.Observer) Option {
	return func(o *options) { o.obs = obs }
}

func apply(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Postgres opens the store on the PostgreSQL database at url and migrates it. Tables live in the
// first schema of the search_path, which url may set (postgres://...?search_path=plane); pool_max_conns
// sets the pool's size (16 by default).
func Postgres(ctx context.Context, url string, opts ...Option) (store.Store, error) {
	return sqlstore.Open(ctx, postgres.Files, func() (sqldb.Driver, error) { return postgres.Open(ctx, url) }, apply(opts).obs)
}

// SQLite opens (creating if needed, with mode 0600) the store in the SQLite file at path and
// migrates it.
func SQLite(ctx context.Context, path string, opts ...Option) (store.Store, error) {
	return sqlstore.Open(ctx, sqlite.Files, func() (sqldb.Driver, error) { return sqlite.Open(ctx, path) }, apply(opts).obs)
}
