package store_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestSQLiteFileIsPrivateAndWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plane.db")
	storetest.Open(t, "sqlite://"+path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Fatalf("database file mode %o, want 600", mode)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("journal mode %s, want wal", mode)
	}
}

func TestSQLiteRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plane.db")
	s := storetest.Open(t, path)
	_ = s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO lexicon_migrations VALUES (9999, 'from_the_future', 0)`); err != nil {
		t.Fatal(err)
	}
	_, err = open.URL(t.Context(), path)
	if !errcode.Has(err, errcode.StoreSchemaNewer) {
		t.Fatalf("got %v, want %s", err, errcode.StoreSchemaNewer)
	}
}
