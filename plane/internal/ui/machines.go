package ui

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type machinesData struct {
	api.MachineList
	// Form is what a refused add held, shown again with Error.
	Form  url.Values
	Error string
}

func (u *UI) machines(w http.ResponseWriter, r *http.Request) {
	u.machinesPage(w, r, http.StatusOK, machinesData{Form: url.Values{}})
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
	f := r.PostForm
	req := api.MachineRequest{Name: f.Get("name"), Purpose: f.Get("purpose"), Owner: f.Get("owner"), OSRelease: f.Get("os_release"),
		RetireBy: f.Get("retire_by")}
	if _, err := run(u, r, api.MachinesAdd, u.cfg.Machines.Add, req); err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.machinesPage(w, r, errcode.Status(errcode.Code(err)), machinesData{Form: f, Error: errMessage(r, err)})
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
