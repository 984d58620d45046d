// Package sqlite is the store's embedded SQLite dialect (modernc.org/sqlite, no cgo): one writer
// connection, a pool of read-only ones, and the SQL in sql/.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// SQLite connection settings. WAL lets readers run beside the writer; synchronous=FULL makes a commit
// durable before it returns, because a claim that a power cut rolled back would hand its job out a second
// time; the busy timeout is how long a writer of another process (a CLI minting a token beside a running
// plane) may hold the lock before a write fails with store.busy.
const (
	sqliteReaders = 4
	sqliteParams  = "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
)

// Files is the dialect's SQL: sql/queries*.sql and sql/migrations.
//
//go:embed sql
var Files embed.FS

// Open opens (creating if needed, with mode 0600) the SQLite file at path. Writes go through one
// connection whose transactions are BEGIN IMMEDIATE, so they never interleave and never deadlock on a
// lock upgrade; reads use a small pool of read-only connections.
func Open(ctx context.Context, path string) (sqldb.Driver, error) {
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, errcode.New(errcode.StoreURLInvalid,
			"SQLite path %q must be a plain file path (no ?, #, file: or :memory:, which readers could not share)", path).
			With(errcode.DetailPath, path)
	}
	// The file holds token hashes and, later, sealed credentials: create it private. SQLite gives its
	// -wal and -shm files the mode of the database file.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.StoreUnavailable, "cannot open SQLite file %s", path)
	}
	_ = f.Close()
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}

	writer, err := sql.Open("sqlite", path+"?"+sqliteParams+"&_txlock=immediate")
	if err != nil {
		return nil, errcode.Wrap(err, errcode.StoreUnavailable, "cannot open SQLite file %s", path)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	// Open the writer first: it switches the file to WAL before any reader connects.
	if err := writer.PingContext(ctx); err != nil {
		_ = writer.Close()
		return nil, errcode.Wrap(err, errcode.StoreUnavailable, "cannot open SQLite file %s", path)
	}
	reader, err := sql.Open("sqlite", path+"?"+sqliteParams+"&_pragma=query_only(1)")
	if err != nil {
		_ = writer.Close()
		return nil, errcode.Wrap(err, errcode.StoreUnavailable, "cannot open SQLite file %s", path)
	}
	reader.SetMaxOpenConns(sqliteReaders)
	reader.SetMaxIdleConns(sqliteReaders)

	return &driver{writerDB: writer, reader: reader, hub: sqldb.NewHub(nil),
		writerStmts: newStmts(writer), readerStmts: newStmts(reader)}, nil
}

type driver struct {
	writerDB    *sql.DB
	reader      *sql.DB
	hub         *sqldb.Hub
	writerStmts *stmts
	readerStmts *stmts
}

// The driver's own sqldb.Execer is the read side.
func (d *driver) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return d.read().Exec(ctx, query, args...)
}

func (d *driver) Query(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	return d.read().Query(ctx, query, args...)
}

func (d *driver) QueryRow(ctx context.Context, query string, args ...any) sqldb.Row {
	return d.read().QueryRow(ctx, query, args...)
}

func (d *driver) read() sqlDB { return sqlDB{db: d.reader, stmts: d.readerStmts} }

func (d *driver) Writer() sqldb.Execer { return sqlDB{db: d.writerDB, stmts: d.writerStmts} }

func (d *driver) Tx(ctx context.Context, fn func(sqldb.Execer) error) error {
	tx, err := d.writerDB.BeginTx(ctx, nil) // BEGIN IMMEDIATE, from _txlock
	if err != nil {
		return err
	}
	if err := fn(sqlDB{db: tx, stmts: d.writerStmts, tx: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (d *driver) Pipeline(ctx context.Context, steps []sqldb.Step) error {
	return d.Tx(ctx, func(ex sqldb.Execer) error {
		for _, st := range steps {
			var err error
			if st.Scan == nil {
				_, err = ex.Exec(ctx, st.Query, st.Args...)
			} else {
				err = st.Scan(ex.QueryRow(ctx, st.Query, st.Args...))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func (d *driver) JobQueued(context.Context, sqldb.Execer, ...string) error { return nil }

// JobCommitted wakes this process's waiters. Another process sharing the file is not woken: its long
// polls find the job when they next time out and claim.
func (d *driver) JobCommitted(nodeID string) { d.hub.Wake(nodeID) }

func (d *driver) Notifier() sqldb.Notifier { return d.hub }

func (d *driver) Kind(err error) sqldb.ErrKind {
	if errors.Is(err, sql.ErrNoRows) {
		return sqldb.ErrNoRows
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return sqldb.ErrUnique
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_BUSY_SNAPSHOT:
			return sqldb.ErrBusy
		}
	}
	return sqldb.ErrOther
}

func (d *driver) Ping(ctx context.Context) error {
	if err := d.writerDB.PingContext(ctx); err != nil {
		return err
	}
	return d.reader.PingContext(ctx)
}

func (d *driver) Close() error {
	d.hub.Close()
	return errors.Join(d.readerStmts.close(), d.writerStmts.close(), d.reader.Close(), d.writerDB.Close())
}

// stmts holds the prepared statements of one sql.DB: the hot statements, prepared once when the
// store opens (Prepare), since parsing and planning is most of what a short SQLite statement costs and
// database/sql prepares the text again on every call otherwise. They are prepared up front, not on
// first use: the writer has one connection, which a transaction holds while it runs.
type stmts struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

func newStmts(db *sql.DB) *stmts { return &stmts{db: db, m: map[string]*sql.Stmt{}} }

// get returns the prepared statement of query, or nil to run the text.
func (c *stmts) get(query string) *sql.Stmt {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[query]
}

func (c *stmts) prepare(ctx context.Context, query string) error {
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[query]; old != nil {
		_ = old.Close()
	}
	c.m[query] = st
	return nil
}

// Prepare prepares the hot statements once, on the writer and the readers, after migrations.
func (d *driver) Prepare(ctx context.Context, queries []string) error {
	for _, q := range queries {
		if q == "" {
			continue
		}
		if err := d.writerStmts.prepare(ctx, q); err != nil {
			return err
		}
		if err := d.readerStmts.prepare(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func (c *stmts) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}

// sqlDB runs statements through database/sql, binding times as microseconds since the epoch, the form
// the SQLite schema keeps them in.
type sqlDB struct {
	db interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}
	stmts *stmts
	tx    *sql.Tx // set inside a transaction: prepared statements run through it
}

// prepared is the prepared form of query on this Execer, or nil to run the text.
func (s sqlDB) prepared(ctx context.Context, query string) *sql.Stmt {
	if s.stmts == nil {
		return nil
	}
	st := s.stmts.get(query)
	if st != nil && s.tx != nil {
		st = s.tx.StmtContext(ctx, st) // closed with the transaction; reuses the connection's statement
	}
	return st
}

func (s sqlDB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var res sql.Result
	var err error
	if st := s.prepared(ctx, query); st != nil {
		res, err = st.ExecContext(ctx, sqliteArgs(args)...)
	} else {
		res, err = s.db.ExecContext(ctx, query, sqliteArgs(args)...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s sqlDB) Query(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	var rs *sql.Rows
	var err error
	if st := s.prepared(ctx, query); st != nil {
		rs, err = st.QueryContext(ctx, sqliteArgs(args)...)
	} else {
		rs, err = s.db.QueryContext(ctx, query, sqliteArgs(args)...)
	}
	if err != nil {
		return nil, err
	}
	return sqlRows{rs}, nil
}

func (s sqlDB) QueryRow(ctx context.Context, query string, args ...any) sqldb.Row {
	if st := s.prepared(ctx, query); st != nil {
		return st.QueryRowContext(ctx, sqliteArgs(args)...)
	}
	return s.db.QueryRowContext(ctx, query, sqliteArgs(args)...)
}

func sqliteArgs(args []any) []any {
	for i, a := range args {
		if t, ok := a.(time.Time); ok {
			args[i] = t.UnixMicro()
		}
	}
	return args
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

var (
	_ sqldb.Driver   = (*driver)(nil)
	_ sqldb.Execer   = sqlDB{}
	_ sqldb.Preparer = (*driver)(nil)
)
