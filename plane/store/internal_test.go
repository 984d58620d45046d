package store

import (
	"sort"
	"strings"
	"testing"
	"time"
)

func TestIDsSortByCreation(t *testing.T) {
	var src idSource
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var ids []string
	for i := range 3000 {
		// Many ids per millisecond, a clock that steps back once, then later milliseconds.
		at := t0.Add(time.Duration(i/1000) * time.Millisecond)
		if i == 1500 {
			at = t0.Add(-time.Second)
		}
		ids = append(ids, src.next("job_", at))
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids made one after another do not sort in that order")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %s made twice", id)
		}
		seen[id] = true
		body := strings.TrimPrefix(id, "job_")
		if len(body) != 26 || strings.Trim(body, crockford) != "" {
			t.Fatalf("id %q is not a prefix and 26 Crockford digits", id)
		}
	}
	// Ids of a later millisecond sort after, whatever their random part.
	var a, b idSource
	if a.next("x", t0.Add(time.Millisecond)) <= b.next("x", t0) {
		t.Fatal("an id of a later millisecond sorts first")
	}
}

func TestQueryFilesLoad(t *testing.T) {
	for _, d := range []string{"postgres", "sqlite"} {
		if _, err := loadQueries(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
		ms, err := loadMigrations(d)
		if err != nil || len(ms) == 0 {
			t.Errorf("%s migrations: %v", d, err)
		}
	}
	pg, _ := loadMigrations("postgres")
	lite, _ := loadMigrations("sqlite")
	if len(pg) != len(lite) {
		t.Fatalf("postgres has %d migrations, sqlite %d: every schema change is made in both", len(pg), len(lite))
	}
	for i := range pg {
		if pg[i].name != lite[i].name {
			t.Errorf("migration %d is %s on postgres and %s on sqlite", i+1, pg[i].name, lite[i].name)
		}
	}
}

func TestParseQueriesRefusesDrift(t *testing.T) {
	full, err := queryText("sqlite")
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
		_, err := parseQueries("test.sql", c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

func TestHubCoalescesAndStops(t *testing.T) {
	started := 0
	h := newHub(func() { started++ })
	wake, stop := h.Subscribe("n1")
	other, stopOther := h.Subscribe("n2")
	defer stopOther()
	h.Subscribe("n1") // a second waiter of n1, never read
	if started != 1 {
		t.Fatalf("first ran %d times", started)
	}
	h.wake("n1")
	h.wake("n1")
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
	if n := h.waiterCount(); n != 2 {
		t.Fatalf("%d waiters after stop, want 2", n)
	}
	h.wakeAll()
	<-other
	h.close()
	late, _ := h.Subscribe("n3")
	<-late
}
