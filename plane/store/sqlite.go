package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

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

// OpenSQLite opens (creating if needed, with mode 0600) the store in the SQLite file at path and
// migrates it. Writes go through one connection whose transactions are BEGIN IMMEDIATE, so they never
// interleave and never deadlock on a lock upgrade; reads use a small pool of read-only connections.
func OpenSQLite(ctx context.Context, path string) (Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, errcode.New(errcode.StoreURLInvalid,
			"SQLite path %q must be a plain file path (no ?, #, file: or :memory:, which readers could not share)", path).
			With(errcode.DetailPath, path)
	}
	q, err := loadQueries("sqlite")
	if err != nil {
		return nil, err
	}
	ms, err := loadMigrations("sqlite")
	if err != nil {
		return nil, err
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

	d := &sqliteDriver{writerDB: writer, reader: reader, hub: newHub(nil)}
	s, err := newSQLStore(ctx, d, q, ms)
	if err != nil {
		return nil, err
	}
	return s, nil
}

type sqliteDriver struct {
	writerDB *sql.DB
	reader   *sql.DB
	hub      *hub
}

// The driver's own execer is the read side.
func (d *sqliteDriver) exec(ctx context.Context, query string, args ...any) (int64, error) {
	return sqlDB{d.reader}.exec(ctx, query, args...)
}

func (d *sqliteDriver) query(ctx context.Context, query string, args ...any) (rows, error) {
	return sqlDB{d.reader}.query(ctx, query, args...)
}

func (d *sqliteDriver) queryRow(ctx context.Context, query string, args ...any) row {
	return sqlDB{d.reader}.queryRow(ctx, query, args...)
}

func (d *sqliteDriver) writer() execer { return sqlDB{d.writerDB} }

func (d *sqliteDriver) tx(ctx context.Context, fn func(execer) error) error {
	tx, err := d.writerDB.BeginTx(ctx, nil) // BEGIN IMMEDIATE, from _txlock
	if err != nil {
		return err
	}
	if err := fn(sqlDB{tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (d *sqliteDriver) pipeline(ctx context.Context, steps []step) error {
	return d.tx(ctx, func(ex execer) error {
		for _, st := range steps {
			var err error
			if st.scan == nil {
				_, err = ex.exec(ctx, st.query, st.args...)
			} else {
				err = st.scan(ex.queryRow(ctx, st.query, st.args...))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func (d *sqliteDriver) jobQueued(context.Context, execer, string) error { return nil }

// jobCommitted wakes this process's waiters. Another process sharing the file is not woken: its long
// polls find the job when they next time out and claim.
func (d *sqliteDriver) jobCommitted(nodeID string) { d.hub.wake(nodeID) }

func (d *sqliteDriver) notifier() Notifier { return d.hub }

func (d *sqliteDriver) kind(err error) errKind {
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return errUnique
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_BUSY_SNAPSHOT:
			return errBusy
		}
	}
	return errOther
}

func (d *sqliteDriver) ping(ctx context.Context) error {
	if err := d.writerDB.PingContext(ctx); err != nil {
		return err
	}
	return d.reader.PingContext(ctx)
}

func (d *sqliteDriver) close() error {
	d.hub.close()
	return errors.Join(d.reader.Close(), d.writerDB.Close())
}

// sqlDB runs statements through database/sql, binding times as microseconds since the epoch, the form
// the SQLite schema keeps them in.
type sqlDB struct {
	db interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}
}

func (s sqlDB) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.db.ExecContext(ctx, query, sqliteArgs(args)...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s sqlDB) query(ctx context.Context, query string, args ...any) (rows, error) {
	rs, err := s.db.QueryContext(ctx, query, sqliteArgs(args)...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rs}, nil
}

func (s sqlDB) queryRow(ctx context.Context, query string, args ...any) row {
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
	_ driver = (*sqliteDriver)(nil)
	_ execer = sqlDB{}
)
