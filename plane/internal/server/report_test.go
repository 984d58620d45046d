package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestReportWrittenOnlyWhenChanged: a claim naming the report the plane holds writes nothing (its
// request costs the key lookup and the nonce only), a brief claim naming another is asked for the full
// report, and a result carrying the next claim hands out the next job, unless the result is refused.
func TestReportWrittenOnlyWhenChanged(t *testing.T) {
	at := time.Now()
	p := newPlane(t, wire.Config{Now: func() time.Time { return at }})
	counter := p.st.(store.Counter)
	word := channel.Word{Name: "noop", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}
	full := channel.ClaimRequest{Version: "test", Vocabulary: []channel.Word{word}, Recipes: []channel.RecipeReport{}}
	full.ReportDigest = full.Digest()
	claim := func(req channel.ClaimRequest) channel.ClaimResponse {
		t.Helper()
		body, _ := json.Marshal(req)
		var resp channel.ClaimResponse
		if status, code := p.call(channel.PathClaim, body, p.key, &resp); status != http.StatusOK {
			t.Fatalf("claim: %d %s", status, code)
		}
		return resp
	}
	if resp := claim(full); resp.ReportDigest != full.ReportDigest || resp.SendReport {
		t.Fatalf("a full report is not acknowledged: %+v", resp)
	}
	before := counter.Statements()
	if resp := claim(full.Brief()); resp.ReportDigest != full.ReportDigest || resp.SendReport {
		t.Fatalf("a brief claim of the held report: %+v", resp)
	}
	if n := counter.Statements().Statements - before.Statements; n != 2 {
		t.Fatalf("a brief claim of the held report ran %d statements, want 2 (key, nonce)", n)
	}
	other := full
	other.Version = "test2"
	if resp := claim(other.Brief()); resp.ReportDigest != full.ReportDigest || !resp.SendReport {
		t.Fatalf("a brief claim of a report the plane lacks: %+v", resp)
	}
	n, err := p.st.NodeGet(t.Context(), store.NodeGetParams{ID: p.node.ID})
	if err != nil || n.AgentVersion != "test" || len(n.Vocabulary) != 1 || n.ReportDigest != full.ReportDigest {
		t.Fatalf("after brief claims the node is %+v (%v)", n, err)
	}

	var jobs []store.Job
	for range 3 {
		j, err := p.st.JobCreate(t.Context(), store.JobCreateParams{NodeID: p.node.ID, Word: "noop", Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	idle := full.Brief()
	idle.Idle = true
	first := claim(idle)
	if first.Job == nil || first.Job.ID != jobs[0].ID {
		t.Fatalf("idle claim: %+v", first)
	}
	result := func(id string) (int, string, channel.ResultResponse) {
		t.Helper()
		body, _ := json.Marshal(channel.ResultRequest{JobID: id, Outcome: channel.OutcomeCompleted, Output: json.RawMessage(`{}`), Claim: &idle})
		var resp channel.ResultResponse
		status, code := p.call(channel.PathResult, body, p.key, &resp)
		return status, code, resp
	}
	status, code, resp := result(jobs[0].ID)
	if status != http.StatusOK || resp.State != channel.JobCompleted || resp.Claim == nil || resp.Claim.Job == nil ||
		resp.Claim.Job.ID != jobs[1].ID || resp.Claim.ReportDigest != full.ReportDigest {
		t.Fatalf("finish-and-claim: %d %s %+v", status, code, resp)
	}
	// The same result again is refused, and claims nothing.
	if status, code, _ := result(jobs[0].ID); status != http.StatusConflict || code != errcode.JobNotRunning {
		t.Fatalf("a result for a finished job: %d %s", status, code)
	}
	if j, _ := p.st.JobGet(t.Context(), store.JobGetParams{ID: jobs[2].ID}); j.State != store.JobQueued {
		t.Fatalf("a refused result claimed job %s: %s", j.ID, j.State)
	}
	status, code, resp = result(jobs[1].ID)
	if status != http.StatusOK || resp.Claim == nil || resp.Claim.Job == nil || resp.Claim.Job.ID != jobs[2].ID {
		t.Fatalf("finish-and-claim after a refused one: %d %s %+v", status, code, resp)
	}
}

// TestResultCarriesTheSighting: a result whose idle claim needs only the node's last-seen time written
// (the time grew stale) writes it in the result's own transaction, beside the result and the next
// claim, with the nonce: no statement of its own and no transaction of its own, so it costs what a
// quiet result costs but that one step (none on PostgreSQL, where it rides in the result's statement).
func TestResultCarriesTheSighting(t *testing.T) {
	at := time.Now().UTC().Truncate(time.Millisecond)
	p := newPlane(t, wire.Config{Now: func() time.Time { return at }})
	counter := p.st.(store.Counter)
	word := channel.Word{Name: "noop", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}
	full := channel.ClaimRequest{Version: "test", Vocabulary: []channel.Word{word}, Recipes: []channel.RecipeReport{}}
	full.ReportDigest = full.Digest()
	idle := full.Brief()
	idle.Idle = true
	call := func(path string, req any, out any) {
		t.Helper()
		body, _ := json.Marshal(req)
		if status, code := p.call(path, body, p.key, out); status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, status, code)
		}
	}
	var claimed channel.ClaimResponse
	call(channel.PathClaim, full, &claimed) // busy: reports and returns at once
	var jobs []store.Job
	for range 3 {
		j, err := p.st.JobCreate(t.Context(), store.JobCreateParams{NodeID: p.node.ID, Word: "noop", Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	call(channel.PathClaim, idle, &claimed)
	if claimed.Job == nil || claimed.Job.ID != jobs[0].ID {
		t.Fatalf("claim: %+v", claimed)
	}
	result := func(id string) store.StatementCounts {
		t.Helper()
		before := counter.Statements()
		var resp channel.ResultResponse
		call(channel.PathResult, channel.ResultRequest{JobID: id, Outcome: channel.OutcomeCompleted, Output: json.RawMessage(`{}`), Claim: &idle}, &resp)
		if resp.Claim == nil || resp.Claim.Job == nil {
			t.Fatalf("finish-and-claim of %s handed out nothing: %+v", id, resp)
		}
		after := counter.Statements()
		return store.StatementCounts{Statements: after.Statements - before.Statements, Transactions: after.Transactions - before.Transactions}
	}
	quiet := result(jobs[0].ID)
	at = at.Add(2 * time.Minute) // past the interval a sighting may go unwritten
	seen := result(jobs[1].ID)
	n, err := p.st.NodeGet(t.Context(), store.NodeGetParams{ID: p.node.ID})
	if err != nil || !n.LastSeenAt.Equal(at) || !n.Idle {
		t.Fatalf("after a result with a stale sighting: seen %s idle %v (%v), want %s", n.LastSeenAt, n.Idle, err, at)
	}
	if seen.Transactions != quiet.Transactions || seen.Statements > quiet.Statements+1 {
		t.Fatalf("a result writing the sighting cost %+v, a quiet one %+v", seen, quiet)
	}
}
