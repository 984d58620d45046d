package sqldb_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/postgres"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqlite"
)

func TestQueryFilesLoad(t *testing.T) {
	dialects := map[string]fs.FS{"postgres": postgres.Files, "sqlite": sqlite.Files}
	loaded := map[string][]sqldb.Migration{}
	for d, files := range dialects {
		_, ms, err := sqldb.Load(files)
		if err != nil || len(ms) == 0 {
			t.Errorf("%s: %d migrations, %v", d, len(ms), err)
		}
		loaded[d] = ms
	}
	pg, lite := loaded["postgres"], loaded["sqlite"]
	if len(pg) != len(lite) {
		t.Fatalf("postgres has %d migrations, sqlite %d: every schema change is made in both", len(pg), len(lite))
	}
	for i := range pg {
		if pg[i].Name != lite[i].Name {
			t.Errorf("migration %d is %s on postgres and %s on sqlite", i+1, pg[i].Name, lite[i].Name)
		}
	}
}

func TestParseQueriesRefusesDrift(t *testing.T) {
	full, err := sqldb.QueryText(sqlite.Files)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, text, want string }{
		{"missing query", strings.Replace(string(full), "-- name: JobGet\n", "-- name: JobGot\n", 1), "no query JobGet"},
		{"query no code runs", string(full) + "\n-- name: Extra\nSELECT 1\n", "no code runs: Extra"},
		{"unknown fragment", strings.Replace(string(full), "{{job_columns}}", "{{job_colums}}", 1), "unknown fragment"},
		{"duplicate", string(full) + "\n-- name: JobGet\nSELECT 1\n", "defined twice"},
	}
	for _, c := range cases {
		_, err := sqldb.ParseQueries("test.sql", c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

func TestHubCoalescesAndStops(t *testing.T) {
	started := 0
	h := sqldb.NewHub(func() { started++ })
	wake, stop := h.Subscribe("n1")
	other, stopOther := h.Subscribe("n2")
	defer stopOther()
	h.Subscribe("n1") // a second waiter of n1, never read
	if started != 1 {
		t.Fatalf("first ran %d times", started)
	}
	h.Wake("n1")
	h.Wake("n1")
	<-wake
	select {
	case <-wake:
		t.Fatal("two wake-ups did not coalesce")
	default:
	}
	select {
	case <-other:
		t.Fatal("n2 woken by n1")
	default:
	}
	stop()
	stop()
	if n := h.WaiterCount(); n != 2 {
		t.Fatalf("%d waiters after stop, want 2", n)
	}
	h.WakeAll()
	<-other
	h.Close()
	late, _ := h.Subscribe("n3")
	<-late
}
