// Package postgres is the store's PostgreSQL dialect: a pgx/v5 pool, a LISTEN connection that fans
// queued-job notifications out to long polls, and the SQL in sql/.
package postgres

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// ListenerApplicationName is the application_name of the connection on which a plane process listens
// for queued jobs, so that an operator can tell it apart in pg_stat_activity.
const ListenerApplicationName = "lexicon-plane-listener"

// DefaultPoolMaxConns is the size of a plane's connection pool unless its URL sets pool_max_conns.
const DefaultPoolMaxConns = 16

// HandOutConns is the size of the pool kept for hand-outs after a wake-up (sqldb.HandOut), beside the
// main pool: 10,000 long polls renewing in a wave queue thousands of key lookups, nonces and claims on
// the main pool, and a job queued during the wave would otherwise wait its turn behind all of them.
const HandOutConns = 4

// pgNotifySQL tells every replica's listener that a job was queued; see driver.JobQueued.
const pgNotifySQL = `SELECT pg_notify($1, $2)`

// pgNotifyManySQL is pgNotifySQL for each node id of a JSON array.
const pgNotifyManySQL = `SELECT pg_notify($1, id) FROM jsonb_array_elements_text($2::jsonb) AS id`

// Files is the dialect's SQL: sql/queries*.sql and sql/migrations.
//
//go:embed sql
var Files embed.FS

// Open connects to the PostgreSQL database at url. Tables live in the first schema of the search_path,
// which url may set (postgres://...?search_path=plane): pgx passes unknown parameters as run-time
// parameters of every connection in the pool, the listener's included.
func Open(ctx context.Context, url string) (sqldb.Driver, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the url, password included.
		return nil, errcode.New(errcode.StoreURLInvalid, "cannot parse PostgreSQL url %s", sqldb.RedactURL(url))
	}
	if !strings.Contains(url, "pool_max_conns=") {
		// pgxpool's default, max(4, CPUs), caps how many commits can share one WAL flush; a plane's
		// hot paths are short statements from many long polls at once.
		cfg.MaxConns = DefaultPoolMaxConns
	}
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		// The plane's queries are index probes that finish in milliseconds, but one that probes per
		// node behind a flag (the fleet security view's older reports) is costed as if every probe ran:
		// past jit_above_cost, PostgreSQL spent over 100 ms compiling it for a 70 ms run. The url may
		// still turn it on (jit=on).
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.StoreUnavailable, "cannot open PostgreSQL at %s", sqldb.RedactURL(url))
	}
	laneCfg := cfg.Copy()
	laneCfg.MaxConns, laneCfg.MinConns = HandOutConns, 0
	lane, err := pgxpool.NewWithConfig(ctx, laneCfg)
	if err != nil {
		pool.Close()
		return nil, errcode.Wrap(err, errcode.StoreUnavailable, "cannot open PostgreSQL at %s", sqldb.RedactURL(url))
	}
	d := &driver{pool: pool, lane: lane, listenCfg: cfg.ConnConfig.Copy()}
	d.listenCfg.RuntimeParams["application_name"] = ListenerApplicationName
	d.hub = sqldb.NewHub(d.startListener)
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		pool.Close()
		lane.Close()
		return nil, errcode.Wrap(err, errcode.StoreUnavailable, "cannot reach PostgreSQL at %s", sqldb.RedactURL(url))
	}
	d.channel = notifyChannel(schema)
	return d, nil
}

// notifyChannel names the channel of one schema, so that stores on different schemas of one database
// (tests, or two fleets) do not wake each other. Channel names are identifiers of at most 63 bytes.
func notifyChannel(schema string) string {
	ch := "lexicon_jobs." + schema
	if len(ch) > 63 {
		sum := sha256.Sum256([]byte(schema))
		ch = "lexicon_jobs." + hex.EncodeToString(sum[:16])
	}
	return ch
}

type driver struct {
	pool      *pgxpool.Pool
	lane      *pgxpool.Pool // hand-outs after a wake-up only; see HandOutConns
	channel   string
	listenCfg *pgx.ConnConfig
	hub       *sqldb.Hub

	mu      sync.Mutex
	closed  bool
	stop    context.CancelFunc // stops the listener
	stopped chan struct{}      // closed when the listener has returned
}

func (d *driver) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return pgExec(ctx, d.pool, query, args)
}

func (d *driver) Query(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	rs, err := d.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

func (d *driver) Writer() sqldb.Execer { return d }

func (d *driver) QueryRow(ctx context.Context, query string, args ...any) sqldb.Row {
	return d.pool.QueryRow(ctx, query, args...)
}

func (d *driver) Tx(ctx context.Context, fn func(sqldb.Execer) error) error {
	return pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		return fn(pgTx{tx})
	})
}

func (d *driver) Pipeline(ctx context.Context, steps []sqldb.Step) (err error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	for _, st := range steps {
		b.Queue(st.Query, st.Args...)
	}
	b.Queue("COMMIT")
	pool := d.pool
	if sqldb.IsHandOut(ctx) {
		pool = d.lane
	}
	br := pool.SendBatch(ctx, b)
	defer func() {
		// After an error the server skipped the rest, COMMIT included; the pool drops a connection
		// left inside a transaction.
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := br.Exec(); err != nil {
		return err
	}
	for _, st := range steps {
		if st.Scan == nil {
			_, err = br.Exec()
		} else {
			err = st.Scan(br.QueryRow())
		}
		if err != nil {
			return err
		}
	}
	tag, err := br.Exec()
	if err == nil && tag.String() != "COMMIT" {
		err = errors.New("the transaction did not commit: " + tag.String())
	}
	return err
}

// JobQueued sends the notification from inside the transaction: PostgreSQL delivers it at commit, to
// every listening replica (this one included), and drops it on rollback.
// Many nodes (a batch's) are told in one statement, one notification each.
func (d *driver) JobQueued(ctx context.Context, ex sqldb.Execer, nodeIDs ...string) error {
	if len(nodeIDs) == 1 {
		_, err := ex.Exec(ctx, pgNotifySQL, d.channel, nodeIDs[0])
		return err
	}
	ids, _ := json.Marshal(nodeIDs)
	_, err := ex.Exec(ctx, pgNotifyManySQL, d.channel, string(ids))
	return err
}

func (d *driver) JobCommitted(string) {}

func (d *driver) Notifier() sqldb.Notifier { return d.hub }

func (d *driver) Kind(err error) sqldb.ErrKind {
	if errors.Is(err, pgx.ErrNoRows) {
		return sqldb.ErrNoRows
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return sqldb.ErrUnique
		case "40001", "40P01", "55P03": // serialization_failure, deadlock_detected, lock_not_available
			return sqldb.ErrBusy
		}
	}
	return sqldb.ErrOther
}

func (d *driver) Ping(ctx context.Context) error { return d.pool.Ping(ctx) }

func (d *driver) Close() error {
	d.mu.Lock()
	d.closed = true
	stop, stopped := d.stop, d.stopped
	d.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
	d.hub.Close()
	d.pool.Close()
	d.lane.Close()
	return nil
}

// startListener starts the one goroutine that listens for queued jobs on a connection of its own.
func (d *driver) startListener() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.stop, d.stopped = cancel, make(chan struct{})
	stopped := d.stopped
	d.mu.Unlock()
	go func() {
		defer close(stopped)
		d.listen(ctx)
	}()
}

// listen holds a LISTEN connection until ctx ends, reconnecting with backoff when it fails. After each
// (re)connection it wakes every waiter: jobs queued while nobody listened raised no notification here,
// and the waiters' next claims find them.
func (d *driver) listen(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, d.listenCfg)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{d.channel}.Sanitize())
			if err == nil {
				backoff = 50 * time.Millisecond
				d.hub.WakeAll()
				for err == nil {
					var n *pgconn.Notification
					n, err = conn.WaitForNotification(ctx)
					if err == nil {
						d.hub.Wake(n.Payload)
					}
				}
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// pgExec runs a statement on a pool or transaction.
func pgExec(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, query string, args []any) (int64, error) {
	tag, err := db.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

type pgTx struct{ tx pgx.Tx }

func (t pgTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return pgExec(ctx, t.tx, query, args)
}

func (t pgTx) Query(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	rs, err := t.tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

func (t pgTx) QueryRow(ctx context.Context, query string, args ...any) sqldb.Row {
	return t.tx.QueryRow(ctx, query, args...)
}

var (
	_ sqldb.Driver = (*driver)(nil)
	_ sqldb.Execer = pgTx{}
)
