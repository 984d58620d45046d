package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestBatchOnRealAgents runs one word across three real agents as a batch with the CLI: at most one
// job at a time, every node's ending streamed as a JSON line as it comes, then the batch; jobs batch
// show groups the outputs and lists the nodes; a selector matching nothing is refused and creates
// nothing.
func TestBatchOnRealAgents(t *testing.T) {
	f := newFleet(t, "sqlite", fleetOptions{})
	f.fleetOf("web", 3, accepting)
	tr := &testkit.Buffer{}
	out, stderr, code := f.cliRaw(tr, "jobs", "run", "disk_usage", "--selector", "role=web", "--max-parallel", "1", "--error-budget", "0",
		"--param", "root=/tmp", "--param", "top:=1", "--wait", "-o", "json")
	dec := json.NewDecoder(strings.NewReader(out))
	var lines []map[string]any
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("jobs run --selector --wait -o json: %v\n%s\n%s", err, out, stderr)
		}
		lines = append(lines, m)
	}
	if code != 0 || len(lines) != 4 {
		t.Fatalf("jobs run --selector --wait: exit %d, %d values\n%s\n%s", code, len(lines), out, stderr)
	}
	nodes := map[string]bool{}
	for _, l := range lines[:3] {
		if l["state"] != "completed" || l["output"] == nil {
			t.Fatalf("a node's line: %v", l)
		}
		nodes[l["node"].(string)] = true
	}
	batch := lines[3]
	id, _ := batch["id"].(string)
	if len(nodes) != 3 || batch["ok"] != true || batch["state"] != "done" || id == "" {
		t.Fatalf("the nodes %v and the batch %v", nodes, batch)
	}
	show := f.cli(tr, 0, "jobs", "batch", "show", id)
	groups, _ := show["groups"].([]any)
	total := 0
	for _, g := range groups {
		total += int(g.(map[string]any)["count"].(float64))
	}
	if page, _ := show["page"].(map[string]any); total != 3 || page == nil || len(page["jobs"].([]any)) != 3 {
		t.Fatalf("jobs batch show: %v", show)
	}
	text, _, code := f.cliRaw(tr, "jobs", "batch", "show", id)
	if code != 0 || !strings.Contains(text, "web-1") || !strings.Contains(text, "completed 3") {
		t.Fatalf("jobs batch show as text: %d\n%s", code, text)
	}
	if refused := f.cli(tr, 1, "jobs", "run", "disk_usage", "--selector", "role=db"); errCode(refused) != "job.selector_empty" {
		t.Fatalf("a selector matching nothing: %v", refused)
	}
	if list := f.cli(tr, 0, "jobs", "batch", "list"); len(list["batches"].([]any)) != 1 {
		t.Fatalf("jobs batch list: %v", list)
	}
}
