package ui_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

var rolloutLoc = regexp.MustCompile(`^/ui/rollouts/([^/]+)$`)

// TestRollouts starts a release rollout from the form, pauses, resumes, aborts and reverts it on its
// page, each through the API's route with its role; a refused start keeps what was typed, and a
// viewer and an operator are held to what the API lets them do.
func TestRollouts(t *testing.T) {
	p := newTrusted(t)
	admin, _ := p.token(store.RoleAdmin)
	operator, _ := p.token(store.RoleOperator)
	viewer, _ := p.token(store.RoleViewer)
	storetest.Node(t, p.store, "web-1", "0.1.0", time.Now())
	storetest.Node(t, p.store, "web-2", "0.1.0", time.Now())
	b := p.browser()
	b.signIn(admin)
	b.get("/ui/releases", http.StatusOK)
	b.upload(releaseTar(t, p.pub, 1, map[string]string{"probe": "v1"}), b.csrf, http.StatusCreated)

	page := b.get("/ui/rollouts", http.StatusOK)
	if !strings.Contains(page, `id="rollout-form"`) || !strings.Contains(page, `<option value="1"`) {
		t.Fatalf("the rollouts page of an admin:\n%s", page)
	}
	bad := b.post("/ui/rollouts", url.Values{"word": {"probe"}, "params": {"{nope"}, "selector": {"web-1"}}, http.StatusBadRequest)
	if !strings.Contains(bad, "params") || !strings.Contains(bad, `value="web-1"`) {
		t.Fatalf("a start with params that are no JSON:\n%s", bad)
	}
	neither := b.post("/ui/rollouts", url.Values{"selector": {"web-1"}}, http.StatusBadRequest)
	if !strings.Contains(neither, errcode.RequestMalformed) || !strings.Contains(neither, `value="web-1"`) {
		t.Fatalf("a start with neither a release nor a word:\n%s", neither)
	}
	b.post("/ui/rollouts", url.Values{"release": {"1"}, "selector": {"web-1"}}, http.StatusSeeOther)
	res, _ := b.do(http.MethodPost, "/ui/rollouts", url.Values{"csrf": {b.csrf}, "release": {"1"}, "selector": {"all"}, "canary": {"1"}, "percentages": {"100%"}})
	m := rolloutLoc.FindStringSubmatch(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || m == nil {
		t.Fatalf("starting a rollout: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	id := m[1]
	ro := "/ui/rollouts/" + id
	show := b.get(ro, http.StatusOK)
	for _, want := range []string{`id="rollout-state" class="state-running">running`, `id="rollout-pause"`, `id="rollout-abort"`, `id="rollout-revert"`, `id="steps"`, "web-1", "web-2", `id="events"`} {
		if !strings.Contains(show, want) {
			t.Fatalf("the rollout's page lacks %s:\n%s", want, show)
		}
	}
	if list := b.get("/ui/rollouts?state=running", http.StatusOK); !strings.Contains(list, `href="`+ro+`"`) {
		t.Fatalf("the running rollouts do not list %s", id)
	}
	if over := b.get("/ui/", http.StatusOK); !strings.Contains(over, `id="open-rollouts"`) || !strings.Contains(over, `href="`+ro+`"`) {
		t.Fatalf("the overview does not list the open rollout:\n%s", over)
	}
	state := regexp.MustCompile(`id="rollout-state" class="state-[a-z]+">([a-z]+)<`)
	for _, step := range []struct{ action, want string }{{"pause", "paused"}, {"resume", "running"}, {"abort", "aborted"}, {"revert", "reverted"}} {
		b.post(ro+"/"+step.action, nil, http.StatusSeeOther)
		body := b.get(ro, http.StatusOK)
		if got := state.FindStringSubmatch(body); got == nil || got[1] != step.want {
			t.Fatalf("after %s: %v, want %s\n%s", step.action, got, step.want, body)
		}
	}
	if body := b.post(ro+"/resume", nil, http.StatusConflict); !strings.Contains(body, "rollout.") {
		t.Fatalf("resuming a reverted rollout: %s", body)
	}

	// An operator may not roll out a release (the API's rule): no release to choose, and refused.
	o := p.browser()
	o.signIn(operator)
	if page := o.get("/ui/rollouts", http.StatusOK); strings.Contains(page, `id="rollout-release"`) || !strings.Contains(page, `id="rollout-form"`) {
		t.Fatalf("the rollouts page of an operator:\n%s", page)
	}
	if body := o.post("/ui/rollouts", url.Values{"release": {"1"}}, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Fatalf("an operator's release rollout: %s", body)
	}
	// A viewer sees no form and is refused every move.
	v := p.browser()
	v.signIn(viewer)
	for _, path := range []string{"/ui/rollouts", ro} {
		body := v.get(path, http.StatusOK)
		for _, m := range postForm.FindAllStringSubmatch(body, -1) {
			if m[1] != "/ui/signout" {
				t.Errorf("%s offers a viewer the form %s", path, m[1])
			}
		}
	}
	for _, action := range []string{"pause", "resume", "abort", "revert"} {
		if body := v.post(ro+"/"+action, nil, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
			t.Errorf("a viewer's %s: %s", action, body)
		}
	}
	if body := v.post("/ui/rollouts", url.Values{"word": {"w"}}, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Errorf("a viewer's start: %s", body)
	}
}

// TestFleetPatchForm: the rollouts page offers an operator the fleet patch; it is refused until
// "patch" is typed to confirm it, and then the plane's refusal (no selected node has the package
// words) is shown on the page with what was typed; a viewer is not offered it.
func TestFleetPatchForm(t *testing.T) {
	p := newTrusted(t)
	operator, _ := p.token(store.RoleOperator)
	viewer, _ := p.token(store.RoleViewer)
	storetest.Node(t, p.store, "web-1", "0.1.0", time.Now())
	o := p.browser()
	o.signIn(operator)
	if page := o.get("/ui/rollouts", http.StatusOK); !strings.Contains(page, `id="patch-form"`) || !strings.Contains(page, `id="patch-confirm"`) {
		t.Fatalf("the rollouts page of an operator has no patch form:\n%s", page)
	}
	unconfirmed := o.post("/ui/fleet/patch", url.Values{"patch_selector": {"web-1"}}, http.StatusBadRequest)
	if !strings.Contains(unconfirmed, `id="patch-error"`) || !strings.Contains(unconfirmed, `value="web-1"`) {
		t.Fatalf("an unconfirmed patch:\n%s", unconfirmed)
	}
	refused := o.post("/ui/fleet/patch", url.Values{"patch_selector": {"web-1"}, "confirm": {"patch"}}, http.StatusUnprocessableEntity)
	if !strings.Contains(refused, "no selected node can be patched") || !strings.Contains(refused, "web-1 (the node does not report the word install_security_updates)") {
		t.Fatalf("a patch of a node without the words:\n%s", refused)
	}
	if list, err := p.store.RolloutList(t.Context(), store.RolloutListParams{}); err != nil || len(list) != 0 {
		t.Fatalf("refused patches made rollouts: %+v %v", list, err)
	}
	v := p.browser()
	v.signIn(viewer)
	if page := v.get("/ui/rollouts", http.StatusOK); strings.Contains(page, `id="patch-form"`) {
		t.Fatal("a viewer is offered the fleet patch")
	}
	v.post("/ui/fleet/patch", url.Values{"confirm": {"patch"}}, http.StatusForbidden)
}
