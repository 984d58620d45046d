package ui

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type machinesData struct {
	api.MachineList
	// Form is what a refused add or edit held, shown again with Error.
	Form  url.Values
	Error string
	// EditID names the written machine the form rewrites; empty, the form writes a new one down.
	EditID string
}

// machines shows the inventory; ?edit=<id> fills the form with a written machine to rewrite it, the
// page a person already has open rather than a page of its own.
func (u *UI) machines(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("edit")
	if id == "" {
		u.machinesPage(w, r, http.StatusOK, machinesData{Form: url.Values{}})
		return
	}
	who, err := u.may(r, api.MachinesEdit)
	var list api.MachineList
	if err == nil {
		list, err = u.cfg.Machines.List(r.Context(), who)
	}
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	// Only a machine written down is edited: a node or a cloud server is described by what it reports.
	i := slices.IndexFunc(list.Machines, func(m api.Machine) bool { return m.Source == "written" && m.ID == id })
	if i < 0 {
		u.fail(w, r, nil, errcode.New(errcode.MachineNotFound, "no machine written down has the id %q", id))
		return
	}
	m := list.Machines[i]
	f := url.Values{"name": {m.Name}, "purpose": {m.Purpose}, "owner": {m.Owner}, "os_release": {m.OSRelease}, "retire_by": {m.RetireBy}}
	u.machinesPage(w, r, http.StatusOK, machinesData{Form: f, EditID: id})
}

func (u *UI) machinesPage(w http.ResponseWriter, r *http.Request, status int, d machinesData) {
	who, err := u.may(r, api.MachinesList)
	if err == nil {
		d.MachineList, err = u.cfg.Machines.List(r.Context(), who)
	}
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	v := from(r)
	u.render(w, r, status, "machines", &v, d)
}

// machineAdd writes a machine down from the form; a refusal is shown with what was typed.
func (u *UI) machineAdd(w http.ResponseWriter, r *http.Request) {
	u.machineWrite(w, r, "", api.MachinesAdd, u.cfg.Machines.Add)
}

// machineEdit rewrites a machine written down from the form, through the API's edit route and role.
func (u *UI) machineEdit(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	u.machineWrite(w, r, id, api.MachinesEdit, func(ctx context.Context, who api.Token, req api.MachineRequest) (api.Machine, error) {
		return u.cfg.Machines.Edit(ctx, who, id, req)
	})
}

// machineWrite runs an add or an edit; a refusal other than the role's is shown with what was typed.
func (u *UI) machineWrite(w http.ResponseWriter, r *http.Request, id string, rt api.Route,
	write func(context.Context, api.Token, api.MachineRequest) (api.Machine, error)) {
	f := r.PostForm
	req := api.MachineRequest{Name: f.Get("name"), Purpose: f.Get("purpose"), Owner: f.Get("owner"), OSRelease: f.Get("os_release"),
		RetireBy: f.Get("retire_by")}
	if _, err := run(u, r, rt, write, req); err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Has(err, errcode.MachineNotFound) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.machinesPage(w, r, errcode.Status(errcode.Code(err)), machinesData{Form: f, Error: errMessage(r, err), EditID: id})
		return
	}
	http.Redirect(w, r, Prefix+"/machines", http.StatusSeeOther)
}

// machineMove confirms or removes a machine written down, through the API's route and role.
func (u *UI) machineMove(rt api.Route, move func(r *http.Request, who api.Token, id string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		who, err := u.may(r, rt)
		if err == nil {
			err = move(r, who, chi.URLParam(r, "id"))
		}
		if err != nil {
			u.fail(w, r, nil, err)
			return
		}
		http.Redirect(w, r, Prefix+"/machines", http.StatusSeeOther)
	}
}

func (u *UI) machineConfirm(r *http.Request, who api.Token, id string) error {
	_, err := u.cfg.Machines.Confirm(r.Context(), who, id)
	return err
}

func (u *UI) machineRemove(r *http.Request, who api.Token, id string) error {
	_, err := u.cfg.Machines.Remove(r.Context(), who, id)
	return err
}

// reasons joins a row's reasons for its cell.
func reasons(rs []string) string { return strings.Join(rs, "; ") }
