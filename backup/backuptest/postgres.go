package backuptest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/lexicon-fleet/lexicon/backup"
)

// PostgresEnv names the variable pointing tests at PostgreSQL (a postgres:// URL whose host, port
// and user are used), as the store's suite reads it.
const PostgresEnv = "LEXICON_TEST_POSTGRES"

// DefaultPostgresURL is the server tests use when PostgresEnv is not set: the one CI runs.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Postgres returns the backup policy's postgres section for the test server, with the folder of the
// newest PostgreSQL client programs installed (Debian's /usr/lib/postgresql/<version>/bin). When the
// server or the programs are missing the test fails if CI=true, and is skipped otherwise.
func Postgres(t testing.TB) *backup.Postgres {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		base = DefaultPostgresURL
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
	if len(bins) == 0 {
		unavailable(t, "no PostgreSQL client programs in /usr/lib/postgresql/*/bin (apt-get install postgresql-client)")
	}
	slices.SortFunc(bins, func(a, b string) int { return version(a) - version(b) })
	pg := &backup.Postgres{Bin: filepath.Dir(bins[len(bins)-1]), Host: u.Hostname(), User: u.User.Username()}
	if p := u.Port(); p != "" {
		pg.Port, _ = strconv.Atoi(p)
	}
	if out, err := Psql(pg, "postgres", "SELECT 1"); err != nil {
		unavailable(t, "PostgreSQL is not reachable at "+base+" (set "+PostgresEnv+"): "+string(out))
	}
	return pg
}

func version(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(bin))))
	return v
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// Database makes a fresh, empty database and drops it when the test ends.
func Database(t testing.TB, pg *backup.Postgres) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "backuptest_" + hex.EncodeToString(b[:])
	if out, err := Psql(pg, "postgres", "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() { DropDatabase(t, pg, name) })
	return name
}

// DropDatabase drops a database if it exists, whoever is connected to it.
func DropDatabase(t testing.TB, pg *backup.Postgres, name string) {
	t.Helper()
	if out, err := Psql(pg, "postgres", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		t.Errorf("drop database %s: %v\n%s", name, err, out)
	}
}

// Psql runs SQL in database with psql, stopping at the first error, and returns what it printed
// (tuples only, unaligned).
func Psql(pg *backup.Postgres, database, sql string) ([]byte, error) {
	args := []string{"-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", pg.Host, "-U", pg.User, "-d", database, "-c", sql}
	if pg.Port != 0 {
		args = append(args, "-p", strconv.Itoa(pg.Port))
	}
	cmd := exec.Command(filepath.Join(pg.Bin, "psql"), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// Dump is the plain-SQL dump of a database, for comparing two databases' content byte for byte.
func Dump(t testing.TB, pg *backup.Postgres, database string) []byte {
	t.Helper()
	args := []string{"--no-password", "--format=plain", "--no-owner", "-h", pg.Host, "-U", pg.User, "--dbname=" + database}
	if pg.Port != 0 {
		args = append(args, "-p", strconv.Itoa(pg.Port))
	}
	out, err := exec.Command(filepath.Join(pg.Bin, "pg_dump"), args...).Output()
	if err != nil {
		t.Fatalf("pg_dump %s: %v", database, err)
	}
	// pg_dump fences a plain dump with \restrict and \unrestrict lines holding a key it draws afresh
	// for every dump: they are the only lines two dumps of the same content differ in.
	var kept [][]byte
	for _, line := range bytes.SplitAfter(out, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte(`\restrict `)) && !bytes.HasPrefix(line, []byte(`\unrestrict `)) {
			kept = append(kept, line)
		}
	}
	return bytes.Join(kept, nil)
}
