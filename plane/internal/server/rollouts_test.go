package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/server"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestExclusiveJobHoldsTheNode: an exclusive job takes the node's change lease (shown on the node), a
// second exclusive job and a rollout's start on that node wait for it, and once the job is final the
// lease is free again.
func TestExclusiveJobHoldsTheNode(t *testing.T) {
	p := newTrustedPlane(t, server.Config{})
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
