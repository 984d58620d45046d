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
