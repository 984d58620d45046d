package ui_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestPlaneHealth shows the replicas the store knows, as lexicon plane status does: heartbeat, memory
// against its limit, and a missing one marked, which an admin may forget and a viewer may not.
func TestPlaneHealth(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	viewer, _ := p.token(store.RoleViewer)
	now := time.Now()
	for _, hb := range []store.ReplicaHeartbeatParams{
		{ID: "replica-live", Version: "1.2.3", Address: "10.0.0.1:8443", StartedAt: now.Add(-time.Hour), Lease: time.Minute,
			Services: []string{"rollouts"}, HeapBytes: 40 << 20, RSSBytes: 96 << 20, MemoryLimitBytes: 512 << 20, Now: now},
		{ID: "replica-gone", Version: "1.2.2", Address: "10.0.0.2:8443", StartedAt: now.Add(-2 * time.Hour), Lease: time.Minute,
			RSSBytes: 80 << 20, Now: now.Add(-time.Hour)},
	} {
		if _, err := p.store.ReplicaHeartbeat(t.Context(), hb); err != nil {
			t.Fatal(err)
		}
	}
	v := p.browser()
	v.signIn(viewer)
	page := v.get("/ui/plane", http.StatusOK)
	for _, want := range []string{`id="replica-replica-live"`, `id="replica-replica-gone" class="missing"`, `id="missing-count">1 missing`, "96.0 MiB", "18% of 512.0 MiB", "rollouts", "1.2.3"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the plane page lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "/forget") {
		t.Fatal("a viewer is offered to forget a replica")
	}
	if over := v.get("/ui/", http.StatusOK); !strings.Contains(over, `<a href="/ui/plane">2</a> <span class="error">(1 missing)</span>`) {
		t.Fatalf("the overview's replicas:\n%s", over)
	}
	if body := v.post("/ui/plane/replicas/replica-gone/forget", nil, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Fatalf("a viewer forgets a replica: %s", body)
	}
	b := p.browser()
	b.signIn(admin)
	page = b.get("/ui/plane", http.StatusOK)
	if !strings.Contains(page, `action="/ui/plane/replicas/replica-gone/forget"`) || strings.Contains(page, `action="/ui/plane/replicas/replica-live/forget"`) {
		t.Fatalf("an admin's forget buttons:\n%s", page)
	}
	b.post("/ui/plane/replicas/replica-gone/forget", nil, http.StatusSeeOther)
	if page := b.get("/ui/plane", http.StatusOK); strings.Contains(page, "replica-gone") {
		t.Fatal("the forgotten replica is listed")
	}
}
