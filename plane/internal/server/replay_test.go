package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestResultReplayRefused replays signed results on both stores: one carrying an idle claim the plane
// need not write (the steady state of a busy node, whose nonce is recorded in the result's own
// transaction) and one without a claim (whose nonce is recorded first). Each replay is refused as
// channel.replayed and changes nothing: no job finished again, none handed out.
func TestResultReplayRefused(t *testing.T) {
	for _, backend := range []struct {
		name string
		open func(testing.TB) storetest.Env
	}{{"sqlite", storetest.SQLiteOpener}, {"postgres", storetest.PostgresOpener}} {
		t.Run(backend.name, func(t *testing.T) {
			p := newPlaneOn(t, wire.Config{}, backend.open(t).Store)
			ctx := t.Context()
			noop := channel.Word{Name: "noop", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}
			full := channel.ClaimRequest{Idle: true, Version: "test", Vocabulary: []channel.Word{noop}, Recipes: []channel.RecipeReport{}}
			full.ReportDigest = full.Digest()
			body, _ := json.Marshal(full)
			var held channel.ClaimResponse
			if status, code := p.call(channel.PathClaim, body, p.key, &held); status != http.StatusOK || held.ReportDigest != full.ReportDigest {
				t.Fatalf("full claim: %d %s, held %q", status, code, held.ReportDigest)
			}
			brief := full.Brief()
			var jobs []store.Job
			for range 3 {
				j, err := p.st.JobCreate(ctx, store.JobCreateParams{NodeID: p.node.ID, Word: noop.Name, WordDigest: noop.Digest, Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "test"})
				if err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, j)
			}
			body, _ = json.Marshal(brief)
			var claimed channel.ClaimResponse
			if status, code := p.call(channel.PathClaim, body, p.key, &claimed); status != http.StatusOK || claimed.Job == nil || claimed.Job.ID != jobs[0].ID {
				t.Fatalf("brief idle claim: %d %s %+v", status, code, claimed.Job)
			}
			state := func(want ...store.JobState) {
				t.Helper()
				for i, j := range jobs {
					got, err := p.st.JobGet(ctx, store.JobGetParams{ID: j.ID})
					if err != nil {
						t.Fatal(err)
					}
					if got.State != want[i] {
						t.Fatalf("job %d is %s, want %s", i, got.State, want[i])
					}
				}
			}

			// Finish-and-claim, with nothing for the claim to write.
			body, _ = json.Marshal(channel.ResultRequest{JobID: jobs[0].ID, Outcome: channel.OutcomeCompleted, Output: json.RawMessage(`{}`), Claim: &brief})
			send := p.signedOnce(channel.PathResult, body)
			status, code, data := send()
			var resp channel.ResultResponse
			_ = json.Unmarshal(data, &resp)
			if status != http.StatusOK || resp.Claim == nil || resp.Claim.Job == nil || resp.Claim.Job.ID != jobs[1].ID {
				t.Fatalf("finish-and-claim: %d %s %s", status, code, data)
			}
			if status, code, _ := send(); status != http.StatusUnauthorized || code != errcode.ChannelReplayed {
				t.Fatalf("replayed finish-and-claim: %d %s", status, code)
			}
			state(store.JobCompleted, store.JobRunning, store.JobQueued)

			// A result alone.
			body, _ = json.Marshal(channel.ResultRequest{JobID: jobs[1].ID, Outcome: channel.OutcomeFailed, Code: "test.failed"})
			send = p.signedOnce(channel.PathResult, body)
			if status, code, data := send(); status != http.StatusOK {
				t.Fatalf("result: %d %s %s", status, code, data)
			}
			if status, code, _ := send(); status != http.StatusUnauthorized || code != errcode.ChannelReplayed {
				t.Fatalf("replayed result: %d %s", status, code)
			}
			state(store.JobCompleted, store.JobFailed, store.JobQueued)
		})
	}
}

// signedOnce signs body for path once, with the plane's node key, and returns a function that sends
// that same signed request (a replay from the second call on).
func (p *plane) signedOnce(path string, body []byte) func() (int, string, []byte) {
	p.t.Helper()
	signed, _ := http.NewRequest(http.MethodPost, p.url+path, bytes.NewReader(body))
	if err := httpsig.Sign(signed, body, p.key, time.Now()); err != nil {
		p.t.Fatal(err)
	}
	return func() (int, string, []byte) {
		p.t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.url+path, bytes.NewReader(body))
		req.Header = signed.Header.Clone()
		return exchange(p.t, req)
	}
}
