package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// TestPlaneCommands: plane status lists the replicas (text and -o json), a plane incident shows its
// subject where a node's shows the node, and forget-replica exits 1 with the plane's code when refused.
func TestPlaneCommands(t *testing.T) {
	f := newFleet(t)
	ctx := t.Context()
	now := time.Now().UTC()
	for id, at := range map[string]time.Time{"plane-a": now, "plane-b": now.Add(-10 * time.Minute)} {
		if _, err := f.st.ReplicaHeartbeat(ctx, store.ReplicaHeartbeatParams{ID: id, Version: "v1.2.3", Address: id + ":8443",
			StartedAt: at, Lease: time.Minute, Services: []string{"sweep", "incident reconciler"}, RSSBytes: 300 << 20,
			MemoryLimitBytes: 1 << 30, MemoryAlert: 0.8, Now: at}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := f.lexicon("plane", "status")
	if code != 0 || !strings.Contains(out, "replica plane-b  MISSING") || !strings.Contains(out, "rss 300.0 MiB") ||
		!strings.Contains(out, "alert above 80%") || !strings.Contains(out, "services   sweep, incident reconciler") {
		t.Fatalf("plane status: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = f.lexicon("plane", "status", "-o", "json")
	var ps api.PlaneStatus
	if code != 0 || json.Unmarshal([]byte(out), &ps) != nil || len(ps.Replicas) != 2 || !ps.Replicas[1].Missing {
		t.Fatalf("plane status -o json: %d %s", code, out)
	}
	if _, err := f.st.IncidentReconcile(ctx, store.IncidentReconcileParams{Now: now}); err != nil {
		t.Fatal(err)
	}
	code, out, _ = f.lexicon("incidents", "list")
	if code != 0 || !strings.Contains(out, "plane:plane-b") || !strings.Contains(out, "plane:replica_missing") {
		t.Fatalf("incidents list: %d\n%s", code, out)
	}
	code, out, _ = f.lexicon("incidents", "list", "-o", "json")
	var l incidentList
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Incidents) != 2 || l.Incidents[0].Subject != "plane-b" {
		t.Fatalf("incidents list -o json: %d %s", code, out)
	}
	code, out, _ = f.lexicon("incidents", "show", l.Incidents[0].ID)
	if code != 0 || !strings.Contains(out, "  plane      plane-b") || strings.Contains(out, "  node ") {
		t.Fatalf("incidents show: %d\n%s", code, out)
	}
	// The fleet's token is an operator's: forgetting is an admin's.
	code, out, _ = f.lexicon("plane", "forget-replica", "plane-b", "-o", "json")
	if code != 1 || !strings.Contains(out, "auth.forbidden") {
		t.Fatalf("forget as operator: %d %s", code, out)
	}
	code, out, _ = f.lexicon("plane", "forget-replica", "-o", "json")
	if code != 2 {
		t.Fatalf("forget without an id: %d %s", code, out)
	}
}
