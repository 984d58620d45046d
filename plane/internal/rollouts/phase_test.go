package rollouts_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
)

const phaseSeq, phaseDigest, phaseAgent = 7, "sha256:st", "1.4.0"

// agentWords stands for a release catalog whose release pins noop and agent 1.4.0.
type agentWords struct{ benchWords }

func (agentWords) Words(ctx context.Context, seq int64) (map[string]releases.Word, string, error) {
	w, _, err := benchWords{}.Words(ctx, seq)
	return w, phaseDigest, err
}

func (agentWords) Agent(context.Context, int64) (string, error) { return phaseAgent, nil }

// TestReleaseStepTimeoutNamesTheTrial: a release step whose node took the statement and runs the new
// agent on trial, and is still on trial when the step times out, fails with a reason that names the
// trial, not only that the node did not report back.
func TestReleaseStepTimeoutNamesTheTrial(t *testing.T) {
	stepTimesOut(t, phaseAgent, store.NodeUpdate{State: channel.UpdateTrial, Offered: phaseAgent},
		"change did not report back within 1m0s; the node was on trial with agent 1.4.0")
}

// TestReleaseStepTimeoutNamesProbing: a node whose last word was that it is probing the fetched agent
// (the busy claim the agent sends before the probe runs), and that says nothing more before the step
// times out, fails with a reason that names the probe.
func TestReleaseStepTimeoutNamesProbing(t *testing.T) {
	stepTimesOut(t, "1.3.0", store.NodeUpdate{State: channel.UpdateProbing, Offered: phaseAgent},
		"change did not report back within 1m0s; the node was probing agent 1.4.0")
}

// stepTimesOut runs a release rollout of one node whose last report is agent version with update u,
// and checks the step stays running until it times out, with want as its reason.
func stepTimesOut(t *testing.T, version string, u store.NodeUpdate, want string) {
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		url := filepath.Join(t.TempDir(), "plane.db")
		if backend == "postgres" {
			url = storetest.PostgresURL(t)
		}
		st := storetest.Open(t, url)
		nodes := enrolSimulated(t, st, 1)
		steps, stages, err := rollouts.Plan(nodes, "all", rollouts.Staging{})
		if err != nil {
			t.Fatal(err)
		}
		c := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
		ro, err := st.RolloutCreate(ctx, store.RolloutCreateParams{Kind: store.RolloutRelease, ReleaseSequence: phaseSeq,
			Selector: "all", Stages: stages, MaxParallel: 1, StepTimeout: time.Minute, Steps: steps, By: "tester", Now: c.now()})
		if err != nil {
			t.Fatal(err)
		}
		e := &rollouts.Engine{Store: st, Words: agentWords{},
			EngineBase: services.EngineBase{Holder: "replica-a", Now: c.now, LeaseTTL: time.Hour, Log: slog.New(slog.DiscardHandler)}}
		f := &missFixture{t: t, st: st, nodes: nodes, ro: ro, e: e, clock: c}
		f.pass() // moves the node's target to the release
		n := nodes[0]
		if _, err := st.NodeReport(ctx, store.NodeReportParams{ID: n.ID, Now: c.now(), AgentVersion: version,
			StatementSequence: phaseSeq, StatementDigest: phaseDigest, Idle: true,
			Vocabulary: []store.WordRef{{Name: "noop", Digest: noopDigest}}, Update: u}); err != nil {
			t.Fatal(err)
		}
		if got := f.pass(); got.Steps[0].State != store.StepRunning {
			t.Fatalf("a node %s passed its step: %+v", u.State, got.Steps[0])
		}
		c.add(2 * time.Minute)
		got := f.pass()
		wantStep(t, got.Steps[0], store.StepFailed, want, c.now())
	})
}

// TestUpdatePhase: each update state the agent reports maps to the phase a timeout names.
func TestUpdatePhase(t *testing.T) {
	node := func(version string, u store.NodeUpdate) store.Node {
		return store.Node{AgentVersion: version, Update: u}
	}
	for _, tc := range []struct {
		node store.Node
		want string
	}{
		{node("1.3.0", store.NodeUpdate{State: channel.UpdatePending, Offered: phaseAgent}), "fetching agent 1.4.0"},
		{node("1.3.0", store.NodeUpdate{State: channel.UpdateProbing, Offered: phaseAgent}), "probing agent 1.4.0"},
		{node("1.3.0", store.NodeUpdate{State: channel.UpdatePending, Offered: phaseAgent, Reason: "waiting for the job lock"}), "waiting to fetch agent 1.4.0: waiting for the job lock"},
		{node("1.3.0", store.NodeUpdate{State: channel.UpdateTrial, Offered: phaseAgent}), "restarting into agent 1.4.0"},
		{node(phaseAgent, store.NodeUpdate{State: channel.UpdateTrial, Offered: phaseAgent}), "on trial with agent 1.4.0"},
		{node("1.3.0", store.NodeUpdate{State: channel.UpdateFetchFailed, Offered: phaseAgent, Reason: "503"}), "failing to fetch agent 1.4.0: 503"},
		{node("1.3.0", store.NodeUpdate{State: channel.UpdateProbeFailed, Offered: phaseAgent, Reason: "it answered version 1.3.9"}), "refusing agent 1.4.0 (probe_failed): it answered version 1.3.9"},
		{node("1.3.0", store.NodeUpdate{State: channel.UpdateRejected, Offered: phaseAgent, Reason: "no claim within the trial"}), "refusing agent 1.4.0 (rejected): no claim within the trial"},
		{node("1.3.0", store.NodeUpdate{State: channel.UpdateCurrent}), "still on agent 1.3.0 (the update to 1.4.0 not begun, or its restart not reported)"},
		{node(phaseAgent, store.NodeUpdate{State: channel.UpdateCurrent}), ""},
		{node("1.3.0", store.NodeUpdate{State: channel.UpdateNone}), ""},
		{node("1.3.0", store.NodeUpdate{}), ""},
	} {
		if got := rollouts.UpdatePhase(tc.node, phaseAgent); got != tc.want {
			t.Errorf("UpdatePhase(%s, %+v) = %q, want %q", tc.node.AgentVersion, tc.node.Update, got, tc.want)
		}
	}
}
