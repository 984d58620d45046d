package server_test

import (
	"encoding/json"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestJoinStatusHasItsOwnBudget: a waiting machine's signed join_status requests are limited by the
// join key they prove, like a node's requests, and do not spend a paired node's budget.
func TestJoinStatusHasItsOwnBudget(t *testing.T) {
	p := newPlane(t, wire.Config{NodeRate: 1, NodeBurst: 3, AddrRate: 100, AddrBurst: 100})
	k := keys.NewNode()
	req, _ := json.Marshal(channel.JoinRequest{Name: "waiting", Key: k.Public().String()})
	var joined channel.JoinResponse
	if status, code := p.call(channel.PathJoin, req, keys.NodePrivate{}, &joined); status != 202 || joined.JoinID == "" {
		t.Fatalf("join: %d %s", status, code)
	}
	ask, _ := json.Marshal(channel.JoinStatusRequest{JoinID: joined.JoinID})
	for i := range 3 {
		if status, code := p.post(channel.PathJoinStatus, ask, k); status != 200 {
			t.Fatalf("join_status %d: %d %s", i, status, code)
		}
	}
	if status, code := p.post(channel.PathJoinStatus, ask, k); status != 429 || code != errcode.RequestRateLimited {
		t.Fatalf("join_status over its budget: %d %s", status, code)
	}
	if status, code := p.post(channel.PathClaim, claimBody(""), p.key); status != 200 {
		t.Fatalf("the paired node's claim: %d %s", status, code)
	}
}
