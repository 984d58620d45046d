package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

type roleData struct {
	api.RoleVersion
	Items []footprint.Item
	// Nodes are the footprints of the nodes that carry the role, with each item's newest state: after a
	// plan, what each would change, before apply.
	Nodes []api.NodeFootprint
}

func (u *UI) roles(w http.ResponseWriter, r *http.Request) {
	l, err := run(u, r, api.RolesList, func(ctx context.Context, who api.Token, _ struct{}) (api.RoleList, error) {
		return u.cfg.Roles.List(ctx, who)
	}, struct{}{})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	v := from(r)
	u.render(w, r, http.StatusOK, "roles", &v, l)
}

func (u *UI) role(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	rv, err := run(u, r, api.RolesShow, func(ctx context.Context, who api.Token, n string) (api.RoleVersion, error) {
		return u.cfg.Roles.Show(ctx, who, n, api.RoleShowQuery{})
	}, name)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d := roleData{RoleVersion: rv}
	var fp footprint.Footprint
	if json.Unmarshal(rv.Footprint, &fp) == nil {
		d.Items = footprint.Items(&fp)
	}
	for _, n := range rv.Nodes {
		f, err := run(u, r, api.NodesFootprint, u.cfg.Roles.Footprint, n)
		if err != nil {
			u.fail(w, r, nil, err)
			return
		}
		d.Nodes = append(d.Nodes, f)
	}
	v := from(r)
	u.render(w, r, http.StatusOK, "role", &v, d)
}

// rolePlan queues a plan on every node carrying the role and shows the role page, where each node's
// items take their planned states as the plans come back.
func (u *UI) rolePlan(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	if _, err := run(u, r, api.RolesPlan, func(ctx context.Context, who api.Token, n string) (api.RolePlan, error) {
		return u.cfg.Roles.Plan(ctx, who, n, api.RolesPlanRequest{})
	}, name); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+"/roles/"+url.PathEscape(name), http.StatusSeeOther)
}

// roleApply starts the staged rollout of the role's footprints, one node at a time, and shows it.
func (u *UI) roleApply(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	ro, err := run(u, r, api.RolesApply, func(ctx context.Context, who api.Token, n string) (api.Rollout, error) {
		return u.cfg.Roles.Apply(ctx, who, n, api.RolesApplyRequest{})
	}, name)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+"/rollouts/"+url.PathEscape(ro.ID), http.StatusSeeOther)
}

func (u *UI) nodeFootprint(w http.ResponseWriter, r *http.Request) {
	f, err := run(u, r, api.NodesFootprint, u.cfg.Roles.Footprint, chi.URLParam(r, "id"))
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	v := from(r)
	u.render(w, r, http.StatusOK, "footprint", &v, f)
}
