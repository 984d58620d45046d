package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lexicon-fleet/lexicon/plane/store"
)

// PostgresEnv names the variable that points tests at a PostgreSQL database.
const PostgresEnv = "LEXICON_TEST_POSTGRES"

// DefaultPostgresURL is the database tests use when PostgresEnv is not set: the one CI runs.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// PostgresURL creates a fresh schema for one test and returns a URL whose every connection uses it
// (search_path is passed as a run-time parameter), so tests never see each other's rows, and can run in
// parallel. The schema is dropped when the test ends. When PostgreSQL cannot be reached the test fails
// if CI=true, and is skipped otherwise.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		base = DefaultPostgresURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// url", PostgresEnv)
	}
	admin := adminURL(u)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		msg := "PostgreSQL is not reachable at %s (set %s to point tests at one): %v"
		if os.Getenv("CI") == "true" {
			t.Fatalf(msg, base, PostgresEnv, err)
		}
		t.Skipf(msg, base, PostgresEnv, err)
	}
	defer conn.Close(context.Background())
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "storetest_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// adminURL is u without the pgxpool settings (pool_max_conns, ...), which a single connection would
// send to the server as run-time parameters it does not know.
func adminURL(u *url.URL) string {
	a := *u
	q := a.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	a.RawQuery = q.Encode()
	return a.String()
}

// PostgresOpener opens each test's store on a fresh PostgreSQL schema; peers share it.
func PostgresOpener(t testing.TB) Env {
	url := PostgresURL(t)
	return Env{
		Store:     Open(t, url),
		Peer:      func(t testing.TB) store.Store { return Open(t, url) },
		PeerWakes: true,
		Replicas:  true,
	}
}

// SQLiteOpener opens each test's store in a fresh file; peers open the same file.
func SQLiteOpener(t testing.TB) Env {
	path := filepath.Join(t.TempDir(), "plane.db")
	return Env{
		Store: Open(t, path),
		Peer:  func(t testing.TB) store.Store { return Open(t, path) },
	}
}
