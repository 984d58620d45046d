package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
)

// Node pairs a node named name and records one report from it (agent version, one word, trusting):
// the fixture the store's benchmarks use, for other packages' tests and benchmarks that need a fleet
// in a real store.
func Node(tb testing.TB, s store.Store, name, agentVersion string, now time.Time) store.Node {
	tb.Helper()
	return NodeWords(tb, s, name, agentVersion, now, words("w"))
}

// NodeWords is Node reporting the vocabulary vocab.
func NodeWords(tb testing.TB, s store.Store, name, agentVersion string, now time.Time, vocab []store.WordRef) store.Node {
	tb.Helper()
	ctx := tb.Context()
	k, fp := nodeKey()
	j, err := s.JoinCreate(ctx, store.JoinCreateParams{Name: name, Key: k, Fingerprint: fp, SourceAddress: name,
		Addresses: []string{"192.0.2.10"}, MaxPending: 1 << 30, MaxPendingPerSource: 1 << 30, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := s.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: fp, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	n, err := s.NodeReport(ctx, store.NodeReportParams{ID: res.Node.ID, Now: now, AgentVersion: agentVersion, Vocabulary: vocab, Idle: true})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// Fleet is count nodes made with Node, named prefix-0, prefix-1 and so on, on three agent versions.
func Fleet(tb testing.TB, s store.Store, prefix string, count int, now time.Time) []store.Node {
	tb.Helper()
	out := make([]store.Node, 0, count)
	for i := range count {
		out = append(out, Node(tb, s, fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("0.%d.0", i%3+1), now))
	}
	return out
}

// Completed queues word on the node, claims it and finishes it completed with output at at: a report
// as the node would have sent it, for tests and benchmarks of what the plane reads from reports.
func Completed(tb testing.TB, s store.Store, nodeID, word string, output json.RawMessage, at time.Time) store.Job {
	tb.Helper()
	ctx := tb.Context()
	j, err := s.JobCreate(ctx, store.JobCreateParams{NodeID: nodeID, Word: word, Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "test", Now: at})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.JobClaim(ctx, store.JobClaimParams{NodeID: nodeID, Now: at}); err != nil {
		tb.Fatal(err)
	}
	done, err := s.JobFinish(ctx, store.JobFinishParams{ID: j.ID, NodeID: nodeID, Outcome: store.JobCompleted, Output: output, Now: at})
	if err != nil {
		tb.Fatal(err)
	}
	return done
}
