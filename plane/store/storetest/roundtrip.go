package storetest

import (
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// roundTripTests hold the calls a job round trip is made of when it costs least: a claim whose report
// the plane holds (NodeSeen), an idle claim (JobClaimIdle) and a result carrying the next claim
// (JobFinishClaim).
var roundTripTests = []test{
	{"RoundTrip/ReportDigestAndSeen", func(f *fx) {
		n := f.node("web-1", "w")
		if n.ReportDigest != "" {
			f.Fatalf("a report without a digest stored digest %q", n.ReportDigest)
		}
		_, err := f.s.NodeReport(f.ctx, store.NodeReportParams{ID: n.ID, Now: f.at(time.Second), AgentVersion: "1.0.1",
			Vocabulary: words("w"), Idle: true, ReportDigest: "d1"})
		noErr(f, err, "NodeReport")
		noErr(f, f.s.NodeSeen(f.ctx, store.NodeSeenParams{ID: n.ID, Now: f.at(time.Minute), Idle: false}), "NodeSeen")
		got := f.getNode(n.ID)
		if got.ReportDigest != "d1" || got.AgentVersion != "1.0.1" || len(got.Vocabulary) != 1 || got.Idle ||
			!got.LastSeenAt.Equal(f.at(time.Minute)) {
			f.Fatalf("after a report and a sighting: %+v", got)
		}
		_, err = f.s.NodeLeave(f.ctx, store.NodeEndParams{ID: n.ID, Now: f.at(2 * time.Minute)})
		noErr(f, err, "NodeLeave")
		testkit.WantCode(f, f.s.NodeSeen(f.ctx, store.NodeSeenParams{ID: n.ID, Now: f.at(3 * time.Minute)}), errcode.NodeNotActive)
		testkit.WantCode(f, f.s.NodeSeen(f.ctx, store.NodeSeenParams{ID: "node_missing"}), errcode.NodeNotFound)
	}},
	{"RoundTrip/ClaimIdleLosesThenClaims", func(f *fx) {
		n := f.node("web-1", "w")
		first := f.job(n, "w")
		f.claim(n, f.at(time.Second))
		second := f.job(n, "w")
		res, err := f.s.JobClaimIdle(f.ctx, store.JobClaimParams{NodeID: n.ID, Now: f.at(2 * time.Second)})
		noErr(f, err, "JobClaimIdle")
		if len(res.Lost) != 1 || res.Lost[0].ID != first.ID || res.Lost[0].Word != "w" || res.Job == nil || res.Job.ID != second.ID ||
			res.Job.State != store.JobRunning {
			f.Fatalf("an idle claim over a running job: %+v", res)
		}
		if got := f.getJob(first.ID); got.State != store.JobLost || got.OutcomeCode != errcode.JobLost || !got.FinishedAt.Equal(f.at(2*time.Second)) {
			f.Fatalf("the running job is %s (%s) at %s", got.State, got.OutcomeCode, got.FinishedAt)
		}
		// Nothing queued: the running job is lost and nothing is handed out.
		res, err = f.s.JobClaimIdle(f.ctx, store.JobClaimParams{NodeID: n.ID, Now: f.at(3 * time.Second)})
		noErr(f, err, "JobClaimIdle")
		if len(res.Lost) != 1 || res.Lost[0].ID != second.ID || res.Job != nil {
			f.Fatalf("an idle claim with nothing queued: %+v", res)
		}
		// Nothing running, nothing queued: nothing changes.
		res, err = f.s.JobClaimIdle(f.ctx, store.JobClaimParams{NodeID: n.ID, Now: f.at(4 * time.Second)})
		noErr(f, err, "JobClaimIdle")
		if len(res.Lost) != 0 || res.Job != nil {
			f.Fatalf("a quiet idle claim: %+v", res)
		}
		_, err = f.s.JobClaimIdle(f.ctx, store.JobClaimParams{NodeID: "node_missing"})
		testkit.WantCode(f, err, errcode.NodeNotFound)
		_, err = f.s.NodeLeave(f.ctx, store.NodeEndParams{ID: n.ID, Now: f.at(time.Minute)})
		noErr(f, err, "NodeLeave")
		_, err = f.s.JobClaimIdle(f.ctx, store.JobClaimParams{NodeID: n.ID})
		testkit.WantCode(f, err, errcode.NodeNotActive)
	}},
	{"RoundTrip/FinishClaim", func(f *fx) {
		n := f.node("web-1", "w")
		other := f.node("web-2", "w")
		first := f.job(n, "w")
		second := f.job(n, "w")
		f.claim(n, f.at(time.Second))
		res, err := f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: first.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(2 * time.Second)})
		noErr(f, err, "JobFinishClaim")
		if res.Job.ID != first.ID || res.Job.State != store.JobCompleted || res.Next == nil || res.Next.ID != second.ID ||
			res.Next.State != store.JobRunning || !res.Next.ClaimedAt.Equal(f.at(2*time.Second)) {
			f.Fatalf("finish-and-claim: %+v", res)
		}
		// A refusal is counted; with nothing queued nothing is handed out.
		res, err = f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: second.ID, NodeID: n.ID, Outcome: store.JobRefused, Now: f.at(3 * time.Second)})
		noErr(f, err, "JobFinishClaim")
		if res.Job.State != store.JobRefused || res.Next != nil {
			f.Fatalf("a refusal with nothing queued: %+v", res)
		}
		if got := f.getNode(n.ID); got.Refusals != 1 {
			f.Fatalf("%d refusals counted, want 1", got.Refusals)
		}
		// A result that is refused claims nothing, even with a job queued.
		third := f.job(n, "w")
		_, err = f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: second.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(4 * time.Second)})
		testkit.WantCode(f, err, errcode.JobNotRunning)
		_, err = f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: third.ID, NodeID: other.ID, Outcome: store.JobCompleted, Now: f.at(4 * time.Second)})
		testkit.WantCode(f, err, errcode.JobNotFound)
		if got := f.getJob(third.ID); got.State != store.JobQueued {
			f.Fatalf("a refused result claimed job %s: %s", third.ID, got.State)
		}
		if got := f.getNode(n.ID); got.Refusals != 1 {
			f.Fatalf("%d refusals counted after refused results, want 1", got.Refusals)
		}
	}},
	{"RoundTrip/FinishClaimRecordsNonce", func(f *fx) {
		// The result's nonce commits with the result: a replay of it changes nothing, and is told apart.
		n := f.node("web-1", "w")
		first := f.job(n, "w")
		second := f.job(n, "w")
		third := f.job(n, "w")
		f.claim(n, f.at(time.Second))
		nonce := &store.NonceUseParams{KeyID: "key-1", Nonce: "nonce-1", ExpiresAt: f.at(time.Hour), Now: f.at(2 * time.Second)}
		res, err := f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: first.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(2 * time.Second), Nonce: nonce})
		noErr(f, err, "JobFinishClaim")
		if res.Replayed || res.Job.State != store.JobCompleted || res.Next == nil || res.Next.ID != second.ID {
			f.Fatalf("finish-and-claim with a fresh nonce: %+v", res)
		}
		fresh, err := f.s.NonceUse(f.ctx, store.NonceUseParams{KeyID: "key-1", Nonce: "nonce-1", ExpiresAt: f.at(time.Hour), Now: f.at(3 * time.Second)})
		noErr(f, err, "NonceUse")
		if fresh {
			f.Fatalf("the nonce of a finish-and-claim was not recorded")
		}
		// The same nonce again, on the job now running: refused whole.
		res, err = f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: second.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(4 * time.Second), Nonce: nonce})
		noErr(f, err, "JobFinishClaim (replayed)")
		if !res.Replayed || res.Next != nil || res.Job.ID != "" {
			f.Fatalf("a replayed finish-and-claim: %+v", res)
		}
		if got := f.getJob(second.ID); got.State != store.JobRunning {
			f.Fatalf("a replayed result finished job %s: %s", second.ID, got.State)
		}
		if got := f.getJob(third.ID); got.State != store.JobQueued {
			f.Fatalf("a replayed result claimed job %s: %s", third.ID, got.State)
		}
		// A fresh nonce on a result that is refused: the refusal, and the nonce is used up.
		other := &store.NonceUseParams{KeyID: "key-1", Nonce: "nonce-2", ExpiresAt: f.at(time.Hour), Now: f.at(5 * time.Second)}
		_, err = f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: first.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(5 * time.Second), Nonce: other})
		testkit.WantCode(f, err, errcode.JobNotRunning)
		bad := &store.NonceUseParams{KeyID: "key-1", Nonce: "", ExpiresAt: f.at(time.Hour)}
		_, err = f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: second.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(6 * time.Second), Nonce: bad})
		testkit.WantCode(f, err, errcode.StoreParamInvalid)
	}},
	{"RoundTrip/FinishClaimRecordsSeen", func(f *fx) {
		// Seen records the node as seen at the result's time and idle, in the result's transaction: a
		// refused count and a sighting in one go, and a replay changes neither.
		n := f.node("web-1", "w")
		first := f.job(n, "w")
		second := f.job(n, "w")
		f.claim(n, f.at(time.Second))
		noErr(f, f.s.NodeSeen(f.ctx, store.NodeSeenParams{ID: n.ID, Now: f.at(time.Second), Idle: false}), "NodeSeen")
		nonce := &store.NonceUseParams{KeyID: "key-1", Nonce: "nonce-1", ExpiresAt: f.at(time.Hour), Now: f.at(2 * time.Minute)}
		res, err := f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: first.ID, NodeID: n.ID, Outcome: store.JobRefused, Now: f.at(2 * time.Minute),
			Nonce: nonce, Seen: true})
		noErr(f, err, "JobFinishClaim")
		if res.Next == nil || res.Next.ID != second.ID {
			f.Fatalf("finish-and-claim: %+v", res)
		}
		if got := f.getNode(n.ID); !got.LastSeenAt.Equal(f.at(2*time.Minute)) || !got.Idle || got.Refusals != 1 {
			f.Fatalf("after a result with the node seen: seen %s idle %v refusals %d", got.LastSeenAt, got.Idle, got.Refusals)
		}
		// Without Seen the sighting is left as it was.
		_, err = f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: second.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(3 * time.Minute)})
		noErr(f, err, "JobFinishClaim")
		if got := f.getNode(n.ID); !got.LastSeenAt.Equal(f.at(2*time.Minute)) || got.Refusals != 1 {
			f.Fatalf("a result without Seen moved the sighting: %s", got.LastSeenAt)
		}
		// A replay with Seen: refused whole, the sighting unmoved.
		third := f.job(n, "w")
		f.claim(n, f.at(4*time.Minute))
		res, err = f.s.JobFinishClaim(f.ctx, store.JobFinishParams{ID: third.ID, NodeID: n.ID, Outcome: store.JobCompleted, Now: f.at(5 * time.Minute),
			Nonce: nonce, Seen: true})
		noErr(f, err, "JobFinishClaim (replayed)")
		if got := f.getNode(n.ID); !res.Replayed || !got.LastSeenAt.Equal(f.at(2*time.Minute)) {
			f.Fatalf("a replayed result with Seen: %+v, seen %s", res, got.LastSeenAt)
		}
	}},
	{"RoundTrip/Counted", func(f *fx) {
		c, ok := f.s.(store.Counter)
		if !ok {
			f.Fatalf("the store does not count its statements")
		}
		n := f.node("web-1", "w")
		f.job(n, "w")
		before := c.Statements()
		f.claim(n, f.at(time.Second))
		after := c.Statements()
		if after.Statements <= before.Statements || after.Transactions != before.Transactions+1 {
			f.Fatalf("a claim counted as %+v then %+v", before, after)
		}
	}},
}
