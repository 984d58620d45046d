package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

// TestRolloutShowNamesUpdatePhase: rollouts show prints where a release step's node stands in its
// agent update (the phase the API carries), as text that cannot drive the terminal.
func TestRolloutShowNamesUpdatePhase(t *testing.T) {
	var out bytes.Buffer
	rolloutOne{api.Rollout{ID: "ro_1", Kind: "release", Release: 3, State: "running", Steps: []api.RolloutStep{
		{NodeName: "web-1", State: "running", Phase: "change", UpdatePhase: "on trial with agent 1.4.0"},
		{NodeName: "web-2", State: "running", Phase: "change", UpdatePhase: hostile},
		{NodeName: "web-3", State: "passed", Phase: "verify"},
	}}}.Text(&out)
	noControls(t, "rollouts show", out.String())
	if !strings.Contains(out.String(), "web-1") || !strings.Contains(out.String(), "update: on trial with agent 1.4.0") {
		t.Fatalf("rollouts show lacks the update phase:\n%s", out.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "web-3") && strings.Contains(l, "update:") {
			t.Fatalf("a step with no update phase names one: %q", l)
		}
	}
}

// TestNodeWordShowsNodeReach: nodes word prints, after the manifest's reach, what the node's policy
// leaves of each capability: narrowed bounds, denials and a refused class, escaped.
func TestNodeWordShowsNodeReach(t *testing.T) {
	var out bytes.Buffer
	wordOne{api.Word{Name: "converge", Class: "change", Params: []byte(`{}`),
		Reach: []api.WordReach{{Cap: "fs.install", Roots: []string{"/etc", "/srv"}}, {Cap: "nft.apply"}},
		NodeReach: &api.NodeWordReach{Refused: hostile, Caps: []api.WordReach{
			{Cap: "fs.install", Roots: []string{"/etc/nginx"}, Narrowed: true, Note: "never beneath the agent's own folders /etc/lexicon"},
			{Cap: "nft.apply", Narrowed: true, Denied: "this node's policy does not make the inbound firewall Lexicon's"}}}}}.Text(&out)
	noControls(t, "nodes word", out.String())
	for _, want := range []string{"reach fs.install       roots /etc /srv", "on node fs.install     roots /etc/nginx (narrowed by the node's policy); never beneath",
		"on node nft.apply      denied: this node's policy does not make", "on this node: refused: "} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("nodes word lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	wordOne{api.Word{Name: "uptime", Params: []byte(`{}`)}}.Text(&out)
	if !strings.Contains(out.String(), "on this node: not reported") {
		t.Fatalf("a node that reports no reach:\n%s", out.String())
	}
}
