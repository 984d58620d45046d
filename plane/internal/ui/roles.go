package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// refusal is a refused form shown again: what was typed, the error's code and message, and the field
// at fault when the room names one (role.invalid names a JSON pointer into the role file).
type refusal struct {
	Form  url.Values
	Error string
	Field string
	// Which names the form refused on a page with several: "edit" or "assign".
	Which string
}

// refused reads a room's refusal for the page to show with what was typed.
func refused(r *http.Request, err error, f url.Values, which string) refusal {
	out := refusal{Form: f, Error: errMessage(r, err), Which: which}
	if e := errcode.From(err, errcode.InternalError); e != nil {
		if field, ok := e.Details[errcode.DetailField].(string); ok {
			out.Field = field
		}
	}
	return out
}

// shownAgain reports whether a refusal is shown on the form rather than as an error page: not a role
// check (403 stays a page of its own), not the plane's own failure, and not a role that is not there.
func shownAgain(err error) bool {
	return errcode.Code(err) != "" && !errcode.Has(err, errcode.AuthForbidden) && !errcode.Has(err, errcode.RoleNotFound) &&
		!errcode.Has(err, errcode.InternalError)
}

type rolesData struct {
	api.RoleList
	refusal
}

type roleData struct {
	api.RoleVersion
	refusal
	Items []footprint.Item
	// Nodes are the footprints of the nodes that carry the role, with each item's newest state: after a
	// plan, what each would change, before apply.
	Nodes []api.NodeFootprint
}

func (u *UI) roles(w http.ResponseWriter, r *http.Request) {
	u.rolesPage(w, r, http.StatusOK, rolesData{refusal: refusal{Form: url.Values{}}})
}

func (u *UI) rolesPage(w http.ResponseWriter, r *http.Request, status int, d rolesData) {
	l, err := run(u, r, api.RolesList, func(ctx context.Context, who api.Token, _ struct{}) (api.RoleList, error) {
		return u.cfg.Roles.List(ctx, who)
	}, struct{}{})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.RoleList = l
	v := from(r)
	u.render(w, r, status, "roles", &v, d)
}

// roleCreate makes a role from the role file pasted in the form, as `lexicon roles create` sends it:
// the roles room parses and checks it, and a refusal is shown with the file kept.
func (u *UI) roleCreate(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	rv, err := run(u, r, api.RolesCreate, u.cfg.Roles.Create, api.RoleFile{File: f.Get("file")})
	if err != nil {
		if !shownAgain(err) {
			u.fail(w, r, nil, err)
			return
		}
		u.rolesPage(w, r, errcode.Status(errcode.Code(err)), rolesData{refusal: refused(r, err, f, "create")})
		return
	}
	http.Redirect(w, r, Prefix+"/roles/"+url.PathEscape(rv.Name), http.StatusSeeOther)
}

// roleEdit makes the role's next version from the pasted file, based on the version the page showed
// (a version made meanwhile refuses it with role.stale rather than being overwritten unseen).
func (u *UI) roleEdit(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	f := r.PostForm
	req := api.RoleFile{File: f.Get("file")}
	if b := f.Get("base"); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil || n < 1 {
			u.fail(w, r, nil, errcode.New(errcode.RequestMalformed, "the form's base version %q is not a version", b).With(errcode.DetailField, "base"))
			return
		}
		req.Base = n
	}
	_, err := run(u, r, api.RolesEdit, func(ctx context.Context, who api.Token, req api.RoleFile) (api.RoleVersion, error) {
		return u.cfg.Roles.Edit(ctx, who, name, req)
	}, req)
	u.roleAfter(w, r, name, err, "edit")
}

// roleAssign carries the role to the nodes a selector picks, through the API's assign route.
func (u *UI) roleAssign(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	_, err := run(u, r, api.RolesAssign, func(ctx context.Context, who api.Token, req api.RoleAssignRequest) (api.RoleAssignment, error) {
		return u.cfg.Roles.Assign(ctx, who, name, req)
	}, api.RoleAssignRequest{Selector: r.PostForm.Get("selector")})
	u.roleAfter(w, r, name, err, "assign")
}

// roleUnassign removes one assignment. The confirm partial's form carries only the CSRF token, so the
// selector rides in the action's query.
func (u *UI) roleUnassign(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	_, err := run(u, r, api.RolesUnassign, func(ctx context.Context, who api.Token, req api.RoleAssignRequest) (api.RoleAssignment, error) {
		return u.cfg.Roles.Unassign(ctx, who, name, req)
	}, api.RoleAssignRequest{Selector: r.URL.Query().Get("selector")})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+"/roles/"+url.PathEscape(name), http.StatusSeeOther)
}

// roleAfter shows the role again after a change: its page on success, or the page with the refused
// form kept and its code.
func (u *UI) roleAfter(w http.ResponseWriter, r *http.Request, name string, err error, which string) {
	if err == nil {
		http.Redirect(w, r, Prefix+"/roles/"+url.PathEscape(name), http.StatusSeeOther)
		return
	}
	if !shownAgain(err) {
		u.fail(w, r, nil, err)
		return
	}
	u.rolePage(w, r, errcode.Status(errcode.Code(err)), roleData{refusal: refused(r, err, r.PostForm, which)})
}

func (u *UI) role(w http.ResponseWriter, r *http.Request) {
	u.rolePage(w, r, http.StatusOK, roleData{refusal: refusal{Form: url.Values{}}})
}

func (u *UI) rolePage(w http.ResponseWriter, r *http.Request, status int, d roleData) {
	name := chi.URLParam(r, "name")
	rv, err := run(u, r, api.RolesShow, func(ctx context.Context, who api.Token, n string) (api.RoleVersion, error) {
		return u.cfg.Roles.Show(ctx, who, n, api.RoleShowQuery{})
	}, name)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.RoleVersion = rv
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
	u.render(w, r, status, "role", &v, d)
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
