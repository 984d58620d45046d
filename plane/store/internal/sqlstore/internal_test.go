package sqlstore

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
