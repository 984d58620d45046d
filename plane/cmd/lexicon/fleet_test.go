package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// TestNodesCountAndFilters: nodes count prints the store's counts (text and -o json), nodes list
// narrows by label, word and version, and the release and driver reads exit 1 with the plane's code.
func TestNodesCountAndFilters(t *testing.T) {
	f := newFleet(t)
	if _, err := f.st.NodeReport(t.Context(), store.NodeReportParams{ID: f.node.ID, Now: time.Now(), AgentVersion: "0.3.0", Idle: true,
		Vocabulary: []store.WordRef{{Name: "disk_usage", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}},
		Update:     store.NodeUpdate{State: "pending", NeedsNewerAgent: "0.4.0"},
		Facts:      store.NodeFacts{CollectedAt: time.Now(), OS: "debian-12", Kernel: "6.1.0", Addresses: []string{"192.0.2.7"}}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := f.lexicon("nodes", "count")
	if code != 0 || !strings.Contains(out, "1 nodes: 1 active (1 online") || !strings.Contains(out, "1 below floor") || !strings.Contains(out, "agent 0.3.0") {
		t.Fatalf("nodes count: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = f.lexicon("nodes", "count", "-o", "json")
	var fl api.Fleet
	if code != 0 || json.Unmarshal([]byte(out), &fl) != nil || fl.Total != 1 || fl.BelowFloor != 1 {
		t.Fatalf("nodes count -o json: %d %s", code, out)
	}
	for args, want := range map[string]int{"--word disk_usage": 1, "--word uptime": 0, "--version 0.3.0": 1, "--label role=web": 0,
		"--where fact.os=debian-12": 1, "--where fact.os=ubuntu-24.04": 0, "--search 192.0.2.7 --sort -name": 1, "--search os=debian-12 --limit 1": 1} {
		code, out, _ := f.lexicon(append([]string{"nodes", "list", "-o", "json"}, strings.Fields(args)...)...)
		var l api.NodeList
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Nodes) != want {
			t.Errorf("nodes list %s: %d %s", args, code, out)
		}
	}
	code, out, _ = f.lexicon("nodes", "list", "--where", "fact.os=debian-12")
	if code != 0 || !strings.HasPrefix(out, "ID ") || !strings.Contains(out, "NAME") || !strings.Contains(out, f.node.Name) {
		t.Errorf("nodes list has no header or no node: %d\n%s", code, out)
	}
	// A bad filter is the plane's node.filter_invalid, exit 1; no table is printed.
	for _, args := range [][]string{{"--where", "fact.nosuch=1"}, {"--sort", "size"}, {"--where", "web-1,role=web"}} {
		code, out, _ := f.lexicon(append([]string{"nodes", "list", "-o", "json"}, args...)...)
		if code != 1 || !strings.Contains(out, "node.filter_invalid") {
			t.Errorf("nodes list %v: %d %s", args, code, out)
		}
	}
	for _, args := range [][]string{{"releases", "show", "1"}, {"releases", "diff", "1", "2"}, {"drivers", "schema", "dns-memory"}} {
		code, out, _ := f.lexicon(append(args, "-o", "json")...)
		if code != 1 || !strings.Contains(out, `"code"`) {
			t.Errorf("%v on a plane without releases or drivers: %d %s", args, code, out)
		}
	}
}
