package store_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/postgres"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// activeNode enrols a node that reports the word "w".
func activeNode(t *testing.T, s store.Store, name string) store.Node {
	t.Helper()
	ctx := t.Context()
	pub := keys.NewNode().Public()
	j, err := s.JoinCreate(ctx, store.JoinCreateParams{Name: name, Key: pub.String(), Fingerprint: pub.Fingerprint(), SourceAddress: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.NodeReport(ctx, store.NodeReportParams{ID: res.Node.ID, Vocabulary: []store.WordRef{{Name: "w", Version: "1.0.0", Digest: "d", Class: "look"}}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func queue(t *testing.T, s store.Store, n store.Node) {
	t.Helper()
	if _, err := s.JobCreate(t.Context(), store.JobCreateParams{NodeID: n.ID, Word: "w", Class: "look", Params: []byte(`{}`), CreatedBy: "test"}); err != nil {
		t.Fatal(err)
	}
}

func admin(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// The listener's connection dies; it reconnects, wakes every waiter (jobs queued meanwhile raised no
// notification it heard), and hears new jobs again.
func TestPostgresListenerReconnects(t *testing.T) {
	dsn := storetest.PostgresURL(t)
	s := storetest.Open(t, dsn)
	n := activeNode(t, s, "web-1")
	wake, stop := s.Notifier().Subscribe(n.ID)
	defer stop()
	// Once listening, the listener wakes every waiter; nothing else is queued, so this is that catch-up.
	testkit.Wait(t, wake, "catch-up after connecting")

	u, _ := url.Parse(dsn)
	schema := u.Query().Get("search_path")
	conn := admin(t, dsn)
	var killed int
	if err := conn.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND query LIKE '%' || $2 || '%'`, postgres.ListenerApplicationName, schema).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d listener connections, want 1", killed)
	}
	testkit.Wait(t, wake, "catch-up after reconnecting")
	queue(t, s, n)
	testkit.Wait(t, wake, "job after reconnecting")
}

// Replicas starting together on an empty schema migrate it once.
func TestPostgresConcurrentOpenMigratesOnce(t *testing.T) {
	dsn := storetest.PostgresURL(t)
	var wg sync.WaitGroup
	stores := make([]store.Store, 4)
	errs := make([]error, 4)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = open.URL(t.Context(), dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	ms, err := stores[0].MigrationList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := admin(t, dsn).QueryRow(t.Context(), `SELECT count(*) FROM lexicon_migrations`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(ms) {
		t.Fatalf("%d migration rows for %d migrations", rows, len(ms))
	}
}

func TestPostgresRefusesNewerSchema(t *testing.T) {
	dsn := storetest.PostgresURL(t)
	s := storetest.Open(t, dsn)
	_ = s.Close()
	if _, err := admin(t, dsn).Exec(t.Context(), `INSERT INTO lexicon_migrations VALUES (9999, 'from_the_future', now())`); err != nil {
		t.Fatal(err)
	}
	_, err := open.URL(t.Context(), dsn)
	if !errcode.Has(err, errcode.StoreSchemaNewer) {
		t.Fatalf("got %v, want %s", err, errcode.StoreSchemaNewer)
	}
}

func TestOpenURLs(t *testing.T) {
	cases := []struct{ url, code string }{
		{"", errcode.StoreURLInvalid},
		{"mysql://root@localhost/db", errcode.StoreURLInvalid},
		{"file:plane.db", errcode.StoreURLInvalid},
		{":memory:", errcode.StoreURLInvalid},
		{"plane.db?mode=memory", errcode.StoreURLInvalid},
		{"postgres://u:hunter2@127.0.0.1:5432/db?sslmode=sometimes", errcode.StoreURLInvalid},
	}
	for _, c := range cases {
		_, err := open.URL(t.Context(), c.url)
		if !errcode.Has(err, c.code) {
			t.Errorf("Open(%q): got %v, want %s", c.url, err, c.code)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q): the error shows the password: %v", c.url, err)
		}
	}
}

// fakeTB records how PostgresURL ends a test it cannot serve.
type fakeTB struct {
	testing.TB
	ended string
}

type endTest struct{}

func (f *fakeTB) Fatalf(format string, args ...any) { f.ended = "fatal"; panic(endTest{}) }
func (f *fakeTB) Skipf(format string, args ...any)  { f.ended = "skip"; panic(endTest{}) }

// Without PostgreSQL the suite must fail in CI, where it is required, and may skip elsewhere.
func TestPostgresURLFailsInCI(t *testing.T) {
	t.Setenv(storetest.PostgresEnv, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	for _, c := range []struct{ ci, want string }{{"true", "fatal"}, {"", "skip"}} {
		t.Setenv("CI", c.ci)
		f := &fakeTB{TB: t}
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(endTest); !ok {
						panic(r)
					}
				}
			}()
			storetest.PostgresURL(f)
		}()
		if f.ended != c.want {
			t.Errorf("CI=%q: PostgresURL ended the test with %q, want %q", c.ci, f.ended, c.want)
		}
	}
}
