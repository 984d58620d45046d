package ui_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// TestNodesFiltersAndUpdates: the node list narrows by label, word and agent version (the filters
// kept on the next page), a node below its update floor is marked on the list, its page and the
// overview, and the overview's counts are the store's.
func TestNodesFiltersAndUpdates(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	now := time.Now()
	fleet := storetest.Fleet(t, p.store, "node", 60, now) // versions 0.1.0, 0.2.0, 0.3.0 in turn
	web := fleet[0]
	if _, err := p.store.NodeLabel(t.Context(), store.NodeLabelParams{ID: web.ID, Set: map[string]string{"role": "web"}, By: "t", Now: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.NodeReport(t.Context(), store.NodeReportParams{ID: fleet[1].ID, Now: now, AgentVersion: "0.2.0", Idle: true,
		Update: store.NodeUpdate{State: "fetch_failed", Offered: "0.4.0", Reason: "the plane did not answer", NeedsNewerAgent: "0.4.0"}}); err != nil {
		t.Fatal(err)
	}
	b := p.browser()
	b.signIn(admin)

	over := b.get("/ui/", http.StatusOK)
	for _, want := range []string{`<tr><th>All</th><td><a href="/ui/nodes">60</a>`, `id="below-floor-count"><span class="error">1</span>`,
		`href="/ui/nodes?state=active&amp;version=0.3.0">0.3.0</a></th><td>20</td>`} {
		if !strings.Contains(over, want) {
			t.Fatalf("the overview lacks %s:\n%s", want, over)
		}
	}

	rows := regexp.MustCompile(`<tr><td><a href="/ui/nodes/`)
	for query, want := range map[string]int{"?label=role%3Dweb": 1, "?version=0.1.0": 20, "?word=w": 50, "?word=nosuch": 0, "?state=active&version=0.3.0&label=role%3Dweb": 0} {
		if got := len(rows.FindAllString(b.get("/ui/nodes"+query, http.StatusOK), -1)); got != want {
			t.Errorf("/ui/nodes%s: %d rows, want %d", query, got, want)
		}
	}
	// The vocabulary holds w on every node but the one that reported none: the filter pages.
	page := b.get("/ui/nodes?word=w", http.StatusOK)
	next := regexp.MustCompile(`id="next" href="/ui/nodes\?([^"]+)"`).FindStringSubmatch(page)
	if next == nil || !strings.Contains(next[1], "word=w") || !strings.Contains(next[1], "cursor=") {
		t.Fatalf("the next page of a filtered list: %v", next)
	}
	if got := len(rows.FindAllString(b.get("/ui/nodes?"+strings.ReplaceAll(next[1], "&amp;", "&"), http.StatusOK), -1)); got != 9 {
		t.Fatalf("the second page of word=w: %d rows, want 9", got)
	}
	if body := b.get("/ui/nodes?label=role", http.StatusBadRequest); !strings.Contains(body, "request.malformed") {
		t.Fatalf("a label that is not key=value: %s", body)
	}

	list := b.get("/ui/nodes?version=0.2.0", http.StatusOK)
	if !strings.Contains(list, `below-floor">below floor (0.4.0)`) {
		t.Fatalf("the list does not mark the node below floor:\n%s", list)
	}
	one := b.get("/ui/nodes/"+fleet[1].ID, http.StatusOK)
	for _, want := range []string{`id="below-floor"`, "fetch_failed, offered 0.4.0: the plane did not answer", "needs agent 0.4.0 or newer"} {
		if !strings.Contains(one, want) {
			t.Fatalf("the node page lacks %s:\n%s", want, one)
		}
	}
	if labelled := b.get("/ui/nodes/"+web.ID, http.StatusOK); !strings.Contains(labelled, `href="/ui/nodes?label=role%3dweb"`) && !strings.Contains(labelled, `href="/ui/nodes?label=role%3Dweb"`) {
		t.Fatalf("the node page does not link its label to the filter:\n%s", labelled)
	}
}
