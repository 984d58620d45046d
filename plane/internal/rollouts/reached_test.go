package rollouts_test

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// TestReleaseReachedWaitsForThePinnedAgent: a release that pins an agent has reached a node only when
// the node runs that version in state current; a node that refused it is a miss with its reason; a
// node whose updates are off passes on its vocabulary.
func TestReleaseReachedWaitsForThePinnedAgent(t *testing.T) {
	const seq, digest, agent = 7, "sha256:st", "1.4.0"
	words := map[string]releases.Word{"probe": {Module: "sha256:m"}}
	node := func(version string, u store.NodeUpdate) store.Node {
		return store.Node{StatementSequence: seq, StatementDigest: digest, AgentVersion: version, Update: u,
			Vocabulary: []store.WordRef{{Name: "probe", Digest: "sha256:m"}}}
	}
	for _, tc := range []struct {
		name   string
		node   store.Node
		agent  string
		passed bool
		miss   string
	}{
		{"no agent pinned", node("1.3.0", store.NodeUpdate{State: channel.UpdatePending}), "", true, ""},
		{"current on the pinned version", node(agent, store.NodeUpdate{State: channel.UpdateCurrent, Offered: agent}), agent, true, ""},
		{"still on trial", node(agent, store.NodeUpdate{State: channel.UpdateTrial, Offered: agent}), agent, false, ""},
		{"not yet fetched", node("1.3.0", store.NodeUpdate{State: channel.UpdatePending, Offered: agent}), agent, false, ""},
		{"rejected", node("1.3.0", store.NodeUpdate{State: channel.UpdateRejected, Offered: agent, Reason: "crashed on trial"}), agent, false, "rejected"},
		{"refused before the statement was taken", store.Node{StatementSequence: seq - 1, AgentVersion: "1.3.0",
			Update: store.NodeUpdate{State: channel.UpdateVerifyFailed, Offered: agent}}, agent, false, "verify_failed"},
		{"updates off by policy", node("1.3.0", store.NodeUpdate{State: channel.UpdateNone, Reason: "update: off"}), agent, true, ""},
		{"agent that does not update itself", node("1.3.0", store.NodeUpdate{}), agent, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			passed, miss := rollouts.ReleaseReached(tc.node, seq, digest, words, tc.agent)
			if passed != tc.passed || (tc.miss == "") != (miss == "") || !strings.Contains(miss, tc.miss) {
				t.Fatalf("ReleaseReached = %v %q, want %v with a miss naming %q", passed, miss, tc.passed, tc.miss)
			}
		})
	}
}
