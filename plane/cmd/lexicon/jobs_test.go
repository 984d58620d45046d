package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestJobsWatchExitStatus: jobs watch (and so jobs run --wait, which ends in the same watch) exits 0
// only for a completed job, and with its own status for every other final state, printing the job
// either way; jobs show of the same job exits 0, since showing it succeeded.
func TestJobsWatchExitStatus(t *testing.T) {
	f := newFleet(t)
	ctx := t.Context()
	if _, err := f.st.NodeReport(ctx, store.NodeReportParams{ID: f.node.ID, Idle: true,
		Vocabulary: []store.WordRef{{Name: "host_report", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}}}); err != nil {
		t.Fatal(err)
	}
	// queue makes a job and hands it to the node, so that it is running.
	queue := func(claim bool) store.Job {
		t.Helper()
		j, err := f.st.JobCreate(ctx, store.JobCreateParams{NodeID: f.node.ID, Word: "host_report", Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if claim {
			if c, err := f.st.JobClaim(ctx, store.JobClaimParams{NodeID: f.node.ID}); err != nil || c == nil || c.ID != j.ID {
				t.Fatalf("claim: %v %v", c, err)
			}
		}
		return j
	}
	finish := func(outcome store.JobState, code string) func(store.Job) {
		return func(j store.Job) {
			if _, err := f.st.JobFinish(ctx, store.JobFinishParams{ID: j.ID, NodeID: f.node.ID, Outcome: outcome, Code: code, Message: "as the node said"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		state  api.JobState
		claim  bool
		end    func(store.Job)
		status int
	}{
		{api.JobCompleted, true, finish(store.JobCompleted, ""), 0},
		{api.JobFailed, true, finish(store.JobFailed, "word.failed"), ExitJobFailed},
		// A capability the node denies a running word fails the word: the node reports it failed.
		{api.JobFailed, true, finish(store.JobFailed, "capability.denied"), ExitJobFailed},
		{api.JobRefused, true, finish(store.JobRefused, "policy.refused"), ExitJobRefused},
		{api.JobLost, true, func(store.Job) {
			if lost, err := f.st.JobLoseRunning(ctx, store.JobLoseRunningParams{NodeID: f.node.ID}); err != nil || len(lost) != 1 {
				t.Fatalf("lose: %v %v", lost, err)
			}
		}, ExitJobLost},
		{api.JobCancelled, false, func(j store.Job) {
			if _, err := f.st.JobCancel(ctx, store.JobCancelParams{ID: j.ID, By: "ops"}); err != nil {
				t.Fatal(err)
			}
		}, ExitJobCancelled},
		{api.JobFailed, true, func(j store.Job) { // marked failed by an operator: failed like any other
			if _, err := f.st.JobMarkFailed(ctx, store.JobMarkFailedParams{ID: j.ID, By: "ops", Message: "stuck"}); err != nil {
				t.Fatal(err)
			}
		}, ExitJobFailed},
	} {
		j := queue(tc.claim)
		tc.end(j)
		code, out, errOut := f.lexicon("jobs", "watch", j.ID, "-o", "json")
		var got struct {
			api.Job
			OK bool `json:"ok"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != tc.status || got.State != tc.state || got.ID != j.ID ||
			got.OK != (tc.status == 0) {
			t.Fatalf("jobs watch of a %s job: exit %d (want %d), %v\n%s\n%s", tc.state, code, tc.status, err, out, errOut)
		}
		if got.NodeName != "web-1" {
			t.Fatalf("jobs watch: node name %q, want web-1", got.NodeName)
		}
		code, out, _ = f.lexicon("jobs", "watch", j.ID)
		if code != tc.status || !strings.Contains(out, "on node web-1 ("+f.node.ID+"), "+string(tc.state)) {
			t.Fatalf("jobs watch of a %s job as text: exit %d\n%s", tc.state, code, out)
		}
		if code, _, _ := f.lexicon("jobs", "show", j.ID); code != 0 {
			t.Fatalf("jobs show of a %s job: exit %d", tc.state, code)
		}
	}
	// Each status is told in the help of both commands, with what it means for the job's state.
	for _, cmd := range []string{"watch", "run"} {
		code, out, _ := f.lexicon("jobs", cmd, "--help")
		for _, e := range jobExits {
			if code != 0 || !strings.Contains(out, fmt.Sprintf("\n  %d  %s\n", e.Status, e.Meaning)) {
				t.Fatalf("jobs %s --help lacks exit status %d: %d\n%s", cmd, e.Status, code, out)
			}
		}
	}
	for state, status := range map[api.JobState]int{api.JobFailed: ExitJobFailed, api.JobRefused: ExitJobRefused, api.JobLost: ExitJobLost, api.JobCancelled: ExitJobCancelled} {
		if got := (jobEnded{jobOne: jobOne{api.Job{State: state}}}).ExitStatus(); got != status ||
			!slices.ContainsFunc(jobExits, func(e cli.Exit) bool { return e.Status == got && strings.Contains(e.Meaning, string(state)) }) {
			t.Errorf("a %s job ends with %d, which help does not tell as %s", state, got, state)
		}
	}
}

// TestJobsWatchInterrupted: Ctrl-C while following a job ends the command with 1 and
// usage.interrupted, saying the job goes on; it is not a usage error.
func TestJobsWatchInterrupted(t *testing.T) {
	f := newFleet(t)
	if _, err := f.st.NodeReport(t.Context(), store.NodeReportParams{ID: f.node.ID, Idle: true,
		Vocabulary: []store.WordRef{{Name: "host_report", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}}}); err != nil {
		t.Fatal(err)
	}
	j, err := f.st.JobCreate(t.Context(), store.JobCreateParams{NodeID: f.node.ID, Word: "host_report", Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LEXICON_TOKEN", f.token)
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	// The interrupt comes once the watch has shown the job queued, as a person's Ctrl-C would.
	progress := &onWrite{match: "queued", then: interrupt}
	var out bytes.Buffer
	code := cli.Run(ctx, "lexicon", "", commands(), []string{"jobs", "watch", j.ID, "--plane", f.url, "-o", "json"}, &out, progress)
	var env map[string]any
	if code != 1 || json.Unmarshal(out.Bytes(), &env) != nil || env["code"] != errcode.UsageInterrupted ||
		!strings.Contains(env["message"].(string), "it goes on") {
		t.Fatalf("interrupted watch: exit %d\n%s", code, out.String())
	}
}

// onWrite calls then once something written to it holds match.
type onWrite struct {
	match string
	then  func()
	seen  bytes.Buffer
}

func (w *onWrite) Write(p []byte) (int, error) {
	w.seen.Write(p)
	if w.then != nil && strings.Contains(w.seen.String(), w.match) {
		w.then()
		w.then = nil
	}
	return len(p), nil
}

// TestJobsListShowsNodeNames: a person reads the node's name in jobs list, not only its id.
func TestJobsListShowsNodeNames(t *testing.T) {
	f := newFleet(t)
	ctx := t.Context()
	if _, err := f.st.NodeReport(ctx, store.NodeReportParams{ID: f.node.ID, Idle: true,
		Vocabulary: []store.WordRef{{Name: "host_report", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}}}); err != nil {
		t.Fatal(err)
	}
	j, err := f.st.JobCreate(ctx, store.JobCreateParams{NodeID: f.node.ID, Word: "host_report", Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := f.lexicon("jobs", "list")
	if code != 0 || !strings.Contains(out, j.ID) || !strings.Contains(out, "web-1") {
		t.Fatalf("jobs list: %d\n%s", code, out)
	}
	code, out, _ = f.lexicon("jobs", "list", "--node", "web-1", "-o", "json")
	var l api.JobList
	if err := json.Unmarshal([]byte(out), &l); err != nil || code != 0 || len(l.Jobs) != 1 || l.Jobs[0].NodeName != "web-1" || l.Jobs[0].NodeID != f.node.ID {
		t.Fatalf("jobs list -o json: %d %v\n%s", code, err, out)
	}
}
