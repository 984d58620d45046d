package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCLIJobs drives a node's jobs through the admin CLI: listing nodes, following a job to its end,
// a job with params from a file, cancelling a queued job and failing a running one, and listing jobs.
// Every list command answers one JSON object with -o json.
func TestCLIJobs(t *testing.T) {
	f := newFleet(t, "sqlite", fleetOptions{})
	a := f.enrol("cli-1", acceptLookAndChange)

	var listed map[string]any
	for _, n := range f.lexicon(false, "nodes", "list")["nodes"].([]any) {
		if n.(map[string]any)["id"] == a.nodeID {
			listed = n.(map[string]any)
		}
	}
	if listed["name"] != "cli-1" || listed["state"] != "active" {
		t.Fatalf("nodes list: %v", listed)
	}

	// jobs watch follows a job until it ends, and exits 0 because it completed.
	report := f.lexicon(false, "jobs", "run", a.nodeID, "host_report")
	watched := f.lexicon(false, "jobs", "watch", report["id"].(string))
	if watched["id"] != report["id"] || watched["state"] != "completed" || watched["node_name"] != "cli-1" {
		t.Fatalf("jobs watch: %v", watched)
	}

	// Params from a file; the word spins until an operator ends it, and the busy node claims nothing
	// more, so the next job stays queued.
	paramsFile := filepath.Join(f.dir, "spin.json")
	must(t, os.WriteFile(paramsFile, []byte(`{"attack": "loop"}`), 0o644))
	spin := f.lexicon(false, "jobs", "run", a.nodeID, "e2e_spin", "--params-file", paramsFile)
	spinID := spin["id"].(string)
	if p, _ := spin["params"].(map[string]any); p["attack"] != "loop" || len(p) != 1 {
		t.Fatalf("params from the file: %v", spin["params"])
	}
	f.planeLog.WaitFor(t, jobLogged("job handed out", spinID)) // the spin job is running
	queued := f.lexicon(false, "jobs", "run", a.nodeID, "host_report")
	queuedID := queued["id"].(string)

	if got := f.lexicon(true, "jobs", "cancel", spinID); got["code"] != "job.not_queued" {
		t.Fatalf("cancelling a running job: %v", got)
	}
	cancelled := f.lexicon(false, "jobs", "cancel", queuedID)
	if cancelled["state"] != "cancelled" || cancelled["outcome_code"] != "job.cancelled" || cancelled["finished_by"] != "e2e-admin" {
		t.Fatalf("jobs cancel: %v", cancelled)
	}
	failed := f.lexicon(false, "jobs", "mark-failed", spinID, "--message", "spun too long")
	if failed["state"] != "failed" || failed["outcome_code"] != "job.marked_failed" || failed["outcome_message"] != "spun too long" {
		t.Fatalf("jobs mark-failed: %v", failed)
	}
	if got := f.lexicon(true, "jobs", "mark-failed", queuedID); got["code"] != "job.finished" {
		t.Fatalf("failing a cancelled job: %v", got)
	}
	// Watching a job that did not complete exits with its state's status, so `... && next` stops.
	for id, state := range map[string]string{spinID: "failed", queuedID: "cancelled"} {
		job, status := f.lexiconStatus("jobs", "watch", id)
		if job["state"] != state {
			t.Fatalf("jobs watch %s: %v", id, job)
		}
		f.wantJobStatus(job, status)
	}

	states := map[string]any{}
	for _, j := range f.lexicon(false, "jobs", "list", "--node", a.nodeID)["jobs"].([]any) {
		states[j.(map[string]any)["id"].(string)] = j.(map[string]any)["state"]
	}
	want := map[string]any{report["id"].(string): "completed", spinID: "failed", queuedID: "cancelled"}
	if len(states) != len(want) {
		t.Fatalf("jobs list: %v, want %v", states, want)
	}
	for id, s := range want {
		if states[id] != s {
			t.Fatalf("jobs list: %v, want %v", states, want)
		}
	}
	if only := f.lexicon(false, "jobs", "list", "--state", "cancelled")["jobs"].([]any); len(only) != 1 || only[0].(map[string]any)["id"] != queuedID {
		t.Fatalf("jobs list --state cancelled: %v", only)
	}

	// A params file that is not a JSON object, or is missing, is refused before anything is queued.
	bad := filepath.Join(f.dir, "bad.json")
	must(t, os.WriteFile(bad, []byte(`["attack", "loop"]`), 0o644))
	if got := f.lexicon(true, "jobs", "run", a.nodeID, "e2e_spin", "--params-file", bad); got["code"] != "usage.invalid" {
		t.Fatalf("params file of an array: %v", got)
	}
	if got := f.lexicon(true, "jobs", "run", a.nodeID, "e2e_spin", "--params-file", filepath.Join(f.dir, "nosuch.json")); got["code"] != "io.failed" {
		t.Fatalf("missing params file: %v", got)
	}
	if n := len(f.lexicon(false, "jobs", "list")["jobs"].([]any)); n != 3 {
		t.Fatalf("%d jobs after refused params files, want 3", n)
	}

	// Every list answers one JSON object holding its list.
	for _, l := range []struct {
		key  string
		args []string
	}{
		{"joins", []string{"joins", "list"}}, {"nodes", []string{"nodes", "list"}}, {"jobs", []string{"jobs", "list"}},
		{"releases", []string{"releases", "list"}}, {"drivers", []string{"drivers", "list"}}, {"drivers", []string{"drivers", "status"}},
		{"calls", []string{"drivers", "audit"}}, {"accounts", []string{"accounts", "list"}}, {"incidents", []string{"incidents", "list"}},
	} {
		out := f.lexicon(false, l.args...)
		if _, ok := out[l.key].([]any); !ok || out["ok"] != true {
			t.Fatalf("%s -o json: %v", strings.Join(l.args, " "), out)
		}
	}
	tokens := runJSON(t, false, "lexicon-plane", "token", "list", "--data", f.planeData, "--db", f.store)
	if list, ok := tokens["tokens"].([]any); !ok || len(list) != 1 || tokens["ok"] != true {
		t.Fatalf("token list -o json: %v", tokens)
	}
	if b, _ := json.Marshal(tokens); strings.Contains(string(b), "lxt_") {
		t.Fatalf("token list shows a secret: %s", b)
	}
	a.p.kill() // the spin runs to its word's limit; nothing is left to see
}

// TestCLIHelp walks the command tree of lexicon and lexicon-plane as their help shows it: every group
// and command answers --help with exit status 0 and its own usage line, and a group lists commands.
func TestCLIHelp(t *testing.T) {
	for binary, known := range map[string][]string{
		"lexicon":       {"jobs", "nodes list", "jobs watch", "jobs mark-failed", "releases publish"},
		"lexicon-plane": {"serve", "token", "token create", "token list", "token revoke"},
	} {
		var paths []string
		var walk func(path []string)
		walk = func(path []string) {
			out := run(t, false, binary, append(path, "--help")...)
			if usage := "\nUsage:\n  " + strings.Join(append([]string{binary}, path...), " ") + " "; !strings.Contains(out, usage) {
				t.Fatalf("%s %s --help lacks %q:\n%s", binary, strings.Join(path, " "), usage, out)
			}
			paths = append(paths, strings.Join(path, " "))
			_, list, isGroup := strings.Cut(out, "\nCommands:\n")
			list, _, _ = strings.Cut(list, "\n\n")
			if isGroup && list == "" {
				t.Fatalf("%s %s --help lists no commands:\n%s", binary, strings.Join(path, " "), out)
			}
			for line := range strings.Lines(list) {
				if name := strings.Fields(line)[0]; name != "help" && name != "completion" {
					walk(append(path[:len(path):len(path)], name))
				}
			}
		}
		walk(nil)
		for _, k := range known {
			if !slices.Contains(paths, k) {
				t.Fatalf("%s --help lists %q, not %s", binary, paths, k)
			}
		}
	}
}
