package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type rolloutsData struct {
	Rollouts []api.Rollout
	State    string
	States   []string
	Releases []api.Release
	// Form is what a refused start form held, shown again with Error.
	Form  url.Values
	Error string
	// PatchError is why the fleet patch form was refused.
	PatchError string
}

func (u *UI) rollouts(w http.ResponseWriter, r *http.Request) {
	u.rolloutsPage(w, r, http.StatusOK, rolloutsData{Form: url.Values{}})
}

func (u *UI) rolloutsPage(w http.ResponseWriter, r *http.Request, status int, d rolloutsData) {
	q, err := api.ParseRolloutsListQuery(r.URL.Query())
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	q.Limit = 100
	list, err := run(u, r, api.RolloutsList, u.cfg.Rollouts.List, q)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Rollouts, d.State = list.Rollouts, q.State
	d.States = []string{api.RolloutRunning, api.RolloutPaused, api.RolloutHalted, api.RolloutCompleted, api.RolloutAborted, api.RolloutReverted}
	if v := from(r); v.tok.Role.Covers(api.RoleAdmin) {
		rels, err := run(u, r, api.ReleasesList, u.cfg.Releases.List, api.ReleasesListQuery{Limit: 20})
		if err != nil {
			u.fail(w, r, nil, err)
			return
		}
		d.Releases = rels.Releases
	}
	v := from(r)
	u.render(w, r, status, "rollouts", &v, d)
}

// rolloutStart reads the start form into the API's request; the plane checks everything else, and the
// role the change needs (admin for a release, the word's class for a word), as for the CLI.
func (u *UI) rolloutStart(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	req := api.RolloutRequest{
		Word: strings.TrimSpace(f.Get("word")), Preflight: strings.TrimSpace(f.Get("preflight")), Verify: strings.TrimSpace(f.Get("verify")),
		Selector: strings.TrimSpace(f.Get("selector")), Stages: lines(f.Get("stages")), Percentages: list(f.Get("percentages")),
	}
	var bad []string
	num := func(name string, set func(n int64)) {
		if s := strings.TrimSpace(f.Get(name)); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				bad = append(bad, name)
				return
			}
			set(n)
		}
	}
	num("release", func(n int64) { req.Release = n })
	num("canary", func(n int64) { req.Canary = int(n) })
	num("max_parallel", func(n int64) { req.MaxParallel = int(n) })
	num("error_budget", func(n int64) { req.ErrorBudget = int(n) })
	num("step_timeout_s", func(n int64) { req.StepTimeoutMS = n * 1000 })
	raw := func(name string, set func(json.RawMessage)) {
		if s := strings.TrimSpace(f.Get(name)); s != "" {
			if !json.Valid([]byte(s)) {
				bad = append(bad, name)
				return
			}
			set(json.RawMessage(s))
		}
	}
	raw("params", func(m json.RawMessage) { req.Params = m })
	raw("preflight_params", func(m json.RawMessage) { req.PreflightParams = m })
	raw("verify_params", func(m json.RawMessage) { req.VerifyParams = m })
	if len(bad) > 0 {
		u.rolloutsPage(w, r, http.StatusBadRequest, rolloutsData{Form: f, Error: "These fields are not what they should be (a whole number, or JSON): " + strings.Join(bad, ", ")})
		return
	}
	ro, err := run(u, r, api.RolloutsStart, u.cfg.Rollouts.Start, req)
	if err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.rolloutsPage(w, r, errcode.Status(errcode.Code(err)), rolloutsData{Form: f, Error: errMessage(r, err)})
		return
	}
	http.Redirect(w, r, Prefix+"/rollouts/"+url.PathEscape(ro.ID), http.StatusSeeOther)
}

// fleetPatch starts a fleet patch once the operator typed "patch" to confirm it: it installs packages
// on every selected node, so a stray click must not start it.
func (u *UI) fleetPatch(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	if strings.TrimSpace(f.Get("confirm")) != "patch" {
		u.rolloutsPage(w, r, http.StatusBadRequest, rolloutsData{Form: f, PatchError: "Type patch to confirm: it installs the security fixes on every selected node."})
		return
	}
	req := api.FleetPatchRequest{Selector: strings.TrimSpace(f.Get("patch_selector"))}
	if s := strings.TrimSpace(f.Get("patch_max_parallel")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			u.rolloutsPage(w, r, http.StatusBadRequest, rolloutsData{Form: f, PatchError: "Machines at once is a whole number."})
			return
		}
		req.MaxParallel = n
	}
	ro, err := run(u, r, api.FleetPatch, u.cfg.Rollouts.Patch, req)
	if err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.rolloutsPage(w, r, errcode.Status(errcode.Code(err)), rolloutsData{Form: f, PatchError: errMessage(r, err)})
		return
	}
	http.Redirect(w, r, Prefix+"/rollouts/"+url.PathEscape(ro.ID), http.StatusSeeOther)
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func list(s string) []string {
	var out []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

type rolloutData struct {
	api.Rollout
	Passed, Failed, Pending, Running, Skipped int
}

// Live reports whether the rollout can still change by itself, so the page offers a refresh.
func (d rolloutData) Live() bool { return d.State == api.RolloutRunning }

// Can* say which of the API's state moves this state allows, so the page offers only those; the
// plane checks again.
func (d rolloutData) CanPause() bool { return d.State == api.RolloutRunning }
func (d rolloutData) CanResume() bool {
	return d.State == api.RolloutPaused || d.State == api.RolloutHalted
}
func (d rolloutData) CanAbort() bool {
	return d.State == api.RolloutRunning || d.State == api.RolloutPaused || d.State == api.RolloutHalted
}
func (d rolloutData) CanRevert() bool { return d.Kind == "release" && d.State != api.RolloutReverted }

func (u *UI) rollout(w http.ResponseWriter, r *http.Request) {
	var d rolloutData
	var err error
	if d.Rollout, err = run(u, r, api.RolloutsShow, u.cfg.Rollouts.Show, chi.URLParam(r, "id")); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	for _, s := range d.Steps {
		switch s.State {
		case api.StepPassed:
			d.Passed++
		case api.StepFailed:
			d.Failed++
		case api.StepRunning:
			d.Running++
		case api.StepSkipped:
			d.Skipped++
		default:
			d.Pending++
		}
	}
	u.page(w, r, "rollout", d)
}

// rolloutMove is one of the API's state moves, named by its route: move is the room's method.
func (u *UI) rolloutMove(rt api.Route, move func(context.Context, api.Token, string) (api.Rollout, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if _, err := run(u, r, rt, move, id); err != nil {
			u.fail(w, r, nil, err)
			return
		}
		http.Redirect(w, r, Prefix+"/rollouts/"+url.PathEscape(id), http.StatusSeeOther)
	}
}
