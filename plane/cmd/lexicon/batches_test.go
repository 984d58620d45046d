package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestJobsBatchCommands: a batch's show groups identical outputs and names the nodes it skipped, list
// lists it, show --wait -o json prints one JSON line a node then the batch, and exits 10 when a job
// did not complete; bad input is refused with a code and nothing is created.
func TestJobsBatchCommands(t *testing.T) {
	f := newFleet(t)
	ctx := t.Context()
	vocab := []store.WordRef{{Name: "host_report", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}}
	nodes := []store.Node{f.node}
	for i := 2; i <= 4; i++ {
		pub := keys.NewNode().Public()
		j, err := f.st.JoinCreate(ctx, store.JoinCreateParams{Name: fmt.Sprintf("web-%d", i), Key: pub.String(), Fingerprint: pub.Fingerprint(), SourceAddress: "192.0.2.1"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.st.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint()})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, res.Node)
	}
	p := store.BatchCreateParams{Word: "host_report", Selector: "all", Class: "look", Params: json.RawMessage(`{}`), ErrorBudget: store.NoErrorBudget, CreatedBy: "ops"}
	for i, n := range nodes {
		if i < 3 { // web-4 reports no words: skipped
			if _, err := f.st.NodeReport(ctx, store.NodeReportParams{ID: n.ID, Idle: true, Vocabulary: vocab}); err != nil {
				t.Fatal(err)
			}
		}
		p.Targets = append(p.Targets, store.BatchTarget{NodeID: n.ID})
	}
	b, err := f.st.BatchCreate(ctx, p)
	if err != nil || b.Jobs != 3 || b.Skipped != 1 {
		t.Fatalf("BatchCreate: %+v %v", b, err)
	}
	end := func(n store.Node, outcome store.JobState, output string) {
		t.Helper()
		j, err := f.st.JobClaim(ctx, store.JobClaimParams{NodeID: n.ID})
		if err != nil || j == nil {
			t.Fatalf("claim: %v %v", j, err)
		}
		fin := store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: outcome, Output: json.RawMessage(output)}
		if outcome != store.JobCompleted {
			fin.Code, fin.Message, fin.Output = errcode.WordFailed, "no disk", nil
		}
		if _, err := f.st.JobFinish(ctx, fin); err != nil {
			t.Fatal(err)
		}
	}
	end(nodes[0], store.JobCompleted, `{"os":"debian-12"}`)
	end(nodes[1], store.JobCompleted, `{"os":"debian-12"}`)

	code, out, errOut := f.lexicon("jobs", "batch", "show", b.ID)
	for _, want := range []string{"2 nodes answered the same: {\"os\":\"debian-12\"}", "web-4", "does not report the word host_report", "completed 2", "queued 1"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("jobs batch show lacks %q: %d\n%s\n%s", want, code, out, errOut)
		}
	}
	code, out, _ = f.lexicon("jobs", "batch", "show", b.ID, "--state", "completed", "-o", "json")
	var shown batchOne
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown.Page == nil || len(shown.Page.Jobs) != 2 || shown.Page.Jobs[0].NodeName != "web-1" {
		t.Fatalf("jobs batch show --state completed: %d %s", code, out)
	}
	if code, out, _ := f.lexicon("jobs", "batch", "list"); code != 0 || !strings.Contains(out, b.ID) || !strings.Contains(out, "3 nodes") {
		t.Fatalf("jobs batch list: %d %s", code, out)
	}

	// --wait -o json: the two ended nodes at once, the third as it ends, then the batch.
	done := make(chan [3]string)
	go func() {
		code, out, errOut := f.lexicon("jobs", "batch", "show", b.ID, "--wait", "-o", "json")
		done <- [3]string{fmt.Sprint(code), out, errOut}
	}()
	end(nodes[2], store.JobFailed, "")
	got := <-done
	// The output is a stream of JSON values: one a node, compact on its line, then the batch.
	dec := json.NewDecoder(strings.NewReader(got[1]))
	var values []json.RawMessage
	for dec.More() {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("jobs batch show --wait -o json: %v\n%s", err, got[1])
		}
		values = append(values, v)
	}
	if got[0] != fmt.Sprint(ExitBatchIncomplete) || len(values) != 4 {
		t.Fatalf("jobs batch show --wait -o json: exit %s, %d values\n%s\n%s", got[0], len(values), got[1], got[2])
	}
	names := map[string]string{}
	for i, l := range values[:3] {
		var n nodeEnded
		if err := json.Unmarshal(l, &n); err != nil || n.Batch != b.ID || n.Job == "" || strings.Split(got[1], "\n")[i] != string(l) {
			t.Fatalf("node line %q: %v", l, err)
		}
		names[n.Node] = string(n.State)
	}
	if names["web-1"] != "completed" || names["web-2"] != "completed" || names["web-3"] != "failed" {
		t.Fatalf("node lines %v", names)
	}
	var last struct {
		OK     bool `json:"ok"`
		Counts struct{ Failed int }
	}
	if err := json.Unmarshal(values[3], &last); err != nil || last.OK || last.Counts.Failed != 1 {
		t.Fatalf("the batch %s: %v", values[3], err)
	}

	// Bad input: refused with a code, nothing created. The plane pins no release here, so a
	// well-formed batch is refused for the word; the shapes are refused before that.
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"jobs", "run", "host_report", "--selector", "role=web=x"}, 1, errcode.JobSelectorInvalid},
		{[]string{"jobs", "run", "host_report", "--selector", "role=db"}, 1, errcode.JobSelectorEmpty},
		{[]string{"jobs", "run", "host_report", "--selector", "all"}, 1, errcode.JobWordUnavailable},
		{[]string{"jobs", "run", "host_report", "--selector", "all", "--max-parallel", "-1"}, 2, errcode.UsageInvalid},
		{[]string{"jobs", "run", "host_report", "--selector", "all", "--error-budget", "-5"}, 2, errcode.UsageInvalid},
		{[]string{"jobs", "run", "web-1", "host_report", "--selector", "all"}, 2, errcode.UsageInvalid},
		{[]string{"jobs", "run", "web-1", "host_report", "--max-parallel", "3"}, 2, errcode.UsageInvalid},
	} {
		code, out, errOut := f.lexicon(append(tc.args, "-o", "json")...)
		if code != tc.code || !strings.Contains(out+errOut, tc.err) {
			t.Errorf("%v: exit %d, want %d with %s\n%s\n%s", tc.args, code, tc.code, tc.err, out, errOut)
		}
	}
	list, err := f.st.BatchList(ctx, store.BatchListParams{})
	if err != nil || len(list.Batches) != 1 {
		t.Fatalf("refused batches were created: %+v %v", list, err)
	}
}
