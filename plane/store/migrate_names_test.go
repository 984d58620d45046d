package store_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// A database that recorded a migration number under another name (applied by another build that
// took the same number) is refused, rather than left without this binary's tables.
func TestSQLiteRefusesAMigrationRecordedUnderAnotherName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plane.db")
	s := storetest.Open(t, path)
	_ = s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE lexicon_migrations SET name = 'reserved' WHERE version = 2`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("renamed %d migrations", n)
	}
	_, err = open.URL(t.Context(), path)
	if !errcode.Has(err, errcode.StoreMigrationFailed) {
		t.Fatalf("got %v, want %s", err, errcode.StoreMigrationFailed)
	}
}
