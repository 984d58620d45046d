package server_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestExclusiveJobHoldsTheNode: an exclusive job takes the node's change lease (shown on the node), a
// second exclusive job and a rollout's start on that node wait for it, and once the job is final the
// lease is free again.
func TestExclusiveJobHoldsTheNode(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	rel := p.publish([]testWord{{name: "peek", class: manifest.ClassLook}, {name: "wipe", class: manifest.ClassDestructive}}, nil)
	p.report(p.key, rel.words["peek"], rel.words["wipe"])
	const operator, admin = store.RoleOperator, store.RoleAdmin
	post := http.MethodPost
	exclusive, _ := json.Marshal(api.JobRequest{Node: p.node.ID, Word: "peek", Params: json.RawMessage(`{}`), Exclusive: true})
	var j store.Job
	p.want(http.StatusCreated, "", operator, post, "/jobs", exclusive, &j)
	var n api.Node
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes/"+p.node.ID, nil, &n)
	if len(n.Leases) != 1 || n.Leases[0].Name != store.LeaseChange || n.Leases[0].Holder != "job:"+j.ID {
		t.Fatalf("leases of the node: %+v", n.Leases)
	}
	p.want(http.StatusConflict, errcode.LeaseHeld, operator, post, "/jobs", exclusive, nil)
	// A plain job does not ask for the lease.
	p.want(http.StatusCreated, "", operator, post, "/jobs", jobBody(p.node.ID, "peek"), nil)
	p.want(http.StatusOK, "", operator, post, "/jobs/"+j.ID+"/cancel", nil, nil)
	p.want(http.StatusCreated, "", operator, post, "/jobs", exclusive, nil)

	// Rollout roles: a destructive word needs admin, a release needs admin.
	wipe, _ := json.Marshal(api.RolloutRequest{Word: "wipe", Params: json.RawMessage(`{}`)})
	p.want(http.StatusForbidden, errcode.AuthForbidden, operator, post, "/rollouts", wipe, nil)
	release, _ := json.Marshal(api.RolloutRequest{Release: 1})
	p.want(http.StatusForbidden, errcode.AuthForbidden, operator, post, "/rollouts", release, nil)
	var ro api.Rollout
	p.want(http.StatusCreated, "", admin, post, "/rollouts", wipe, &ro)
	if ro.State != api.RolloutRunning || len(ro.Steps) != 1 || ro.CreatedBy != "tok-admin" || ro.Events[0].Action != "start" {
		t.Fatalf("rollout %+v", ro)
	}
	p.want(http.StatusOK, "", operator, post, "/rollouts/"+ro.ID+"/pause", nil, &ro)
	p.want(http.StatusConflict, errcode.RolloutWrongState, operator, post, "/rollouts/"+ro.ID+"/pause", nil, nil)
	// Resuming starts changes again: it takes the role the start took.
	p.want(http.StatusForbidden, errcode.AuthForbidden, operator, post, "/rollouts/"+ro.ID+"/resume", nil, nil)
	p.want(http.StatusOK, "", admin, post, "/rollouts/"+ro.ID+"/resume", nil, &ro)
	p.want(http.StatusOK, "", operator, post, "/rollouts/"+ro.ID+"/pause", nil, &ro)
	p.want(http.StatusForbidden, errcode.AuthForbidden, operator, post, "/rollouts/"+ro.ID+"/revert", nil, nil)
	p.want(http.StatusOK, "", operator, post, "/rollouts/"+ro.ID+"/abort", nil, &ro)
	if ro.State != api.RolloutAborted || ro.Steps[0].State != api.StepSkipped || ro.Events[len(ro.Events)-1].Actor != "tok-operator" {
		t.Fatalf("aborted rollout %+v", ro)
	}
	// An operator resumes what an operator may start.
	peek, _ := json.Marshal(api.RolloutRequest{Word: "peek", Params: json.RawMessage(`{}`)})
	p.want(http.StatusCreated, "", operator, post, "/rollouts", peek, &ro)
	p.want(http.StatusOK, "", operator, post, "/rollouts/"+ro.ID+"/pause", nil, &ro)
	p.want(http.StatusOK, "", operator, post, "/rollouts/"+ro.ID+"/resume", nil, &ro)
	p.want(http.StatusOK, "", operator, post, "/rollouts/"+ro.ID+"/abort", nil, &ro)

	// Publishing offers; --deploy-all also starts a release rollout over every node.
	next := tarRelease(t, p.build(p.pub, []testWord{{name: "peek", class: manifest.ClassLook}, {name: "wipe", class: manifest.ClassDestructive}}, nil).dir)
	var published api.Release
	p.want(http.StatusCreated, "", admin, post, "/releases?deploy_all=true", next, &published)
	if published.Rollout == "" {
		t.Fatalf("publish --deploy-all started no rollout: %+v", published)
	}
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/rollouts/"+published.Rollout, nil, &ro)
	if ro.Kind != "release" || ro.Release != published.Sequence || ro.State != api.RolloutRunning || len(ro.Steps) != 1 {
		t.Fatalf("deploy-all rollout %+v", ro)
	}
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes/"+p.node.ID, nil, &n)
	if n.TargetSequence != 1 {
		t.Fatalf("the node's target moved before the rollout reached it: %d", n.TargetSequence)
	}
}

// TestRevertGoesToTheReissue: agents refuse an older statement, so a revert is refused, moving
// nothing, until the publisher re-issued the release the node ran before under a higher sequence; it
// then moves the node to that re-issue, never to a newer release of other content, and says so in the
// rollout's audit.
func TestRevertGoesToTheReissue(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	look := testWord{name: "peek", class: manifest.ClassLook}
	first := p.publish([]testWord{look}, nil)
	p.publish([]testWord{look, {name: "poke", class: manifest.ClassChange}}, nil)
	post := http.MethodPost
	start, _ := json.Marshal(api.RolloutRequest{Release: 2})
	var ro api.Rollout
	p.want(http.StatusCreated, "", store.RoleAdmin, post, "/rollouts", start, &ro)
	// The engine moves the node's target; the node never reports back, and the admin aborts.
	e := &rollouts.Engine{Store: p.st, EngineBase: services.EngineBase{Holder: "replica-a", Log: slog.New(slog.DiscardHandler)}}
	if err := e.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.want(http.StatusOK, "", store.RoleAdmin, post, "/rollouts/"+ro.ID+"/abort", nil, &ro)
	if ro.Steps[0].PreviousTarget != 1 {
		t.Fatalf("step %+v", ro.Steps[0])
	}
	target := func() int64 {
		var n api.Node
		p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes/"+p.node.ID, nil, &n)
		return n.TargetSequence
	}
	if got := target(); got != 2 {
		t.Fatalf("target after the rollout: %d", got)
	}
	_, code, body := p.admin(store.RoleAdmin, post, "/rollouts/"+ro.ID+"/revert", nil)
	if code != errcode.RolloutRevertNeedsReissue || !strings.Contains(string(body), "lexicon-release renew") ||
		!strings.Contains(string(body), "RELEASE_1_DIR --sequence 3") {
		t.Fatalf("revert before a re-issue: %s %s", code, body)
	}
	if got := target(); got != 2 {
		t.Fatalf("a refused revert moved the node to %d", got)
	}
	// Release 1 re-issued as 3, then a newer release 4 with other content.
	again := filepath.Join(t.TempDir(), "again")
	if _, err := registry.Renew(registry.RenewOptions{Key: p.pub, PreviousDir: first.dir, Sequence: 3, OutDir: again}); err != nil {
		t.Fatal(err)
	}
	p.want(http.StatusCreated, "", store.RoleAdmin, post, "/releases", tarRelease(t, again), nil)
	p.seq = 3
	p.publish([]testWord{look}, nil)
	p.want(http.StatusOK, "", store.RoleAdmin, post, "/rollouts/"+ro.ID+"/revert", nil, &ro)
	if got := target(); got != 3 {
		t.Fatalf("revert moved the node to %d, want the re-issue 3", got)
	}
	last := ro.Events[len(ro.Events)-1]
	if ro.State != api.RolloutReverted || len(ro.Moved) != 1 || last.Action != "revert" || last.Actor != "tok-admin" ||
		last.Detail != "1 nodes moved back to release 3 (release 1 re-issued)" {
		t.Fatalf("reverted rollout %+v, last event %+v", ro, last)
	}
	p.want(http.StatusConflict, errcode.RolloutWrongState, store.RoleAdmin, post, "/rollouts/"+ro.ID+"/revert", nil, nil)
}

// TestRevertOfAFleetWideRollout: a fleet-wide release rollout that completed moved the fleet's target
// (what new nodes get); its revert moves the fleet back too, to the re-issue.
func TestRevertOfAFleetWideRollout(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	look := testWord{name: "peek", class: manifest.ClassLook}
	first := p.publish([]testWord{look}, nil)
	second := p.publish([]testWord{look, {name: "poke", class: manifest.ClassChange}}, nil)
	post := http.MethodPost
	start, _ := json.Marshal(api.RolloutRequest{Release: 2})
	var ro api.Rollout
	p.want(http.StatusCreated, "", store.RoleAdmin, post, "/rollouts", start, &ro)
	e := &rollouts.Engine{Store: p.st, EngineBase: services.EngineBase{Holder: "replica-a", Log: slog.New(slog.DiscardHandler)}}
	ctx := t.Context()
	rolloutMust(t, e.Pass(ctx))
	// The node takes release 2.
	rel, err := p.st.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: 2})
	rolloutMust(t, err)
	var vocab []store.WordRef
	for _, w := range second.words {
		vocab = append(vocab, store.WordRef{Name: w.Name, Version: w.Version, Digest: w.Digest, Class: string(w.Class)})
	}
	_, err = p.st.NodeReport(ctx, store.NodeReportParams{ID: p.node.ID, StatementSequence: 2, StatementDigest: rel.StatementDigest, Vocabulary: vocab})
	rolloutMust(t, err)
	rolloutMust(t, e.Pass(ctx))
	rolloutMust(t, e.Pass(ctx))
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/rollouts/"+ro.ID, nil, &ro)
	if fleet, err := p.st.FleetTarget(ctx); ro.State != api.RolloutCompleted || fleet != 2 || err != nil {
		t.Fatalf("rollout %s, fleet target %d %v", ro.State, fleet, err)
	}
	again := filepath.Join(t.TempDir(), "again")
	if _, err := registry.Renew(registry.RenewOptions{Key: p.pub, PreviousDir: first.dir, Sequence: 3, OutDir: again}); err != nil {
		t.Fatal(err)
	}
	p.want(http.StatusCreated, "", store.RoleAdmin, post, "/releases", tarRelease(t, again), nil)
	p.want(http.StatusOK, "", store.RoleAdmin, post, "/rollouts/"+ro.ID+"/revert", nil, &ro)
	if fleet, err := p.st.FleetTarget(ctx); fleet != 3 || err != nil {
		t.Fatalf("fleet target after the revert: %d %v", fleet, err)
	}
	if last := ro.Events[len(ro.Events)-1]; last.Detail != "1 nodes moved back to release 3 (release 1 re-issued), fleet target 3" {
		t.Fatalf("revert event %+v", last)
	}
}

func rolloutMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeployAllWithNoActiveNode: publishing with deploy_all to a fleet with no active node starts no
// rollout (there is nobody to roll out to) and makes the release the fleet's target at once, the one
// new nodes, provisioned ones first, are given.
func TestDeployAllWithNoActiveNode(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	look := testWord{name: "peek", class: manifest.ClassLook}
	p.publish([]testWord{look}, nil)
	if _, err := p.st.NodeDisconnect(t.Context(), store.NodeEndParams{ID: p.node.ID, By: "test"}); err != nil {
		t.Fatal(err)
	}
	next := tarRelease(t, p.build(p.pub, []testWord{look, {name: "poke", class: manifest.ClassChange}}, nil).dir)
	var published api.Release
	p.want(http.StatusCreated, "", store.RoleAdmin, http.MethodPost, "/releases?deploy_all=true", next, &published)
	if published.Rollout != "" {
		t.Fatalf("a rollout over no node: %+v", published)
	}
	if seq, err := p.st.FleetTarget(t.Context()); err != nil || seq != published.Sequence {
		t.Fatalf("fleet target %d (%v), want %d", seq, err, published.Sequence)
	}
}

// TestFleetPatchRoute: a fleet patch over a node without the package words is refused naming it;
// once the release pins them and the node reports them, an operator starts it, a viewer may not, and
// the answer is a patch rollout of install_security_updates verified by packages_report, its canary
// the node, its machine known.
func TestFleetPatchRoute(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	rel := p.publish([]testWord{{name: "peek", class: manifest.ClassLook}, {name: "install_security_updates", class: manifest.ClassChange},
		{name: "packages_report", class: manifest.ClassLook}}, nil)
	post := http.MethodPost
	all, _ := json.Marshal(api.FleetPatchRequest{})
	p.want(http.StatusUnprocessableEntity, errcode.RolloutEmptySelection, store.RoleOperator, post, "/fleet/patch", all, nil)
	p.want(http.StatusBadRequest, errcode.RequestMalformed, store.RoleOperator, post, "/fleet/patch", []byte(`{"max_parallel":-1}`), nil)
	p.report(p.key, rel.words["peek"], rel.words["install_security_updates"], rel.words["packages_report"])
	p.want(http.StatusForbidden, errcode.AuthForbidden, store.RoleViewer, post, "/fleet/patch", all, nil)
	var ro api.Rollout
	p.want(http.StatusCreated, "", store.RoleOperator, post, "/fleet/patch", all, &ro)
	if ro.Purpose != "patch" || ro.Word != "install_security_updates" || ro.Verify != "packages_report" || len(ro.Steps) != 1 ||
		ro.Steps[0].Machine == "" || len(ro.LeftOut) != 0 || ro.StepTimeoutMS != (20*time.Minute).Milliseconds() {
		t.Fatalf("patch %+v", ro)
	}
}
