package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// TestAuditList: a change made with the CLI, and one refused, are in `lexicon audit list`, which an
// operator may not read; filters and -o json work, and a --since that is no time is a usage error before any request.
func TestAuditList(t *testing.T) {
	f := newFleet(t)
	if code, _, errOut := f.lexicon("nodes", "label", "web-1", "tier=web"); code != 0 {
		t.Fatalf("label: %d %s", code, errOut)
	}
	if code, _, _ := f.lexicon("nodes", "disconnect", "web-1"); code != 1 {
		t.Fatalf("an operator disconnected a node: %d", code)
	}
	if code, _, errOut := f.lexicon("audit", "list"); code != 1 || !strings.Contains(errOut, "auth.forbidden") {
		t.Fatalf("an operator reads the trail: %d %s", code, errOut)
	}
	tok, hash := tokens.Mint()
	if _, err := f.st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "auditor", Role: store.RoleAdmin, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	f.token = tok
	code, out, errOut := f.lexicon("audit", "list", "--actor", "ops", "--operation", "NodesLabel", "--since", "1h", "-o", "json")
	if code != 0 {
		t.Fatalf("audit list: %d %s", code, errOut)
	}
	var l api.AuditEventList
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if len(l.Events) != 1 || l.Events[0].Target != "web-1" || l.Events[0].Code != "ok" || l.Events[0].Actor != "ops" {
		t.Fatalf("events %+v", l.Events)
	}
	code, out, _ = f.lexicon("audit", "list", "--outcome", "failed")
	if code != 0 || !strings.Contains(out, "NodesDisconnect") || !strings.Contains(out, "auth.forbidden") ||
		strings.Contains(out, "NodesLabel") {
		t.Fatalf("failed only: %d\n%s", code, out)
	}
	if code, _, errOut := f.lexicon("audit", "list", "--since", "last tuesday"); code != 2 || !strings.Contains(errOut, "usage.invalid") {
		t.Fatalf("a bad --since: %d %s", code, errOut)
	}
}
