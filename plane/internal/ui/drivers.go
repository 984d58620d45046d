package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type driversData struct {
	// Unavailable is set on a plane that runs without drivers: the page says so instead of failing.
	Unavailable string
	Release     string
	Drivers     []driverRow
	// Orphans are accounts of a driver the list no longer has (neither pinned nor enabled).
	Orphans []api.Account
	Replica string
}

type driverRow struct {
	api.Driver
	Status   *api.Status
	Accounts []api.Account
}

func (u *UI) drivers(w http.ResponseWriter, r *http.Request) {
	var d driversData
	list, err := runDrivers(u, r, api.DriversList, noArg(u.cfg.Drivers.List), struct{}{})
	if errcode.Has(err, errcode.DriverUnavailable) {
		d.Unavailable = errMessage(r, err)
		u.page(w, r, "drivers", d)
		return
	}
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	status, err := runDrivers(u, r, api.DriversStatus, noArg(u.cfg.Drivers.Status), struct{}{})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	accounts, err := runDrivers(u, r, api.AccountsList, u.cfg.Drivers.Accounts, api.AccountsListQuery{})
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Release, d.Replica = list.Release, status.Replica
	byName := map[string]int{}
	for _, dr := range list.Drivers {
		byName[dr.Name] = len(d.Drivers)
		d.Drivers = append(d.Drivers, driverRow{Driver: dr})
	}
	for i := range status.Drivers {
		if j, ok := byName[status.Drivers[i].Name]; ok {
			d.Drivers[j].Status = &status.Drivers[i]
		}
	}
	for _, a := range accounts.Accounts {
		if j, ok := byName[a.Driver]; ok {
			d.Drivers[j].Accounts = append(d.Drivers[j].Accounts, a)
		} else {
			d.Orphans = append(d.Orphans, a)
		}
	}
	u.page(w, r, "drivers", d)
}

func (u *UI) driverEnable(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	req := api.DriverEnable{Unconfined: r.PostFormValue("unconfined") == "true"}
	_, err := runDrivers(u, r, api.DriversEnable, func(ctx context.Context, who api.Token, req api.DriverEnable) (api.Driver, error) {
		return u.cfg.Drivers.Enable(ctx, who, name, req)
	}, req)
	u.driverChange(w, r, err)
}

func (u *UI) driverDisable(w http.ResponseWriter, r *http.Request) {
	_, err := runDrivers(u, r, api.DriversDisable, u.cfg.Drivers.Disable, chi.URLParam(r, "name"))
	u.driverChange(w, r, err)
}

func (u *UI) accountRemove(w http.ResponseWriter, r *http.Request) {
	_, err := runDrivers(u, r, api.AccountsRemove, u.cfg.Drivers.RemoveAccount, chi.URLParam(r, "name"))
	u.driverChange(w, r, err)
}

// runDrivers is run for a route of the drivers room: a plane without drivers refuses it before the
// role check, as the API does.
func runDrivers[A, T any](u *UI, r *http.Request, rt api.Route, f func(context.Context, api.Token, A) (T, error), arg A) (T, error) {
	if err := u.cfg.Drivers.Available(); err != nil {
		var zero T
		return zero, err
	}
	return run(u, r, rt, f, arg)
}

// noArg adapts a room's method that takes nothing beyond the token to run.
func noArg[T any](f func(context.Context, api.Token) (T, error)) func(context.Context, api.Token, struct{}) (T, error) {
	return func(ctx context.Context, who api.Token, _ struct{}) (T, error) { return f(ctx, who) }
}

func (u *UI) driverChange(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix+"/drivers", http.StatusSeeOther)
}

// accountData is the add-account form: the settings fields made from the driver's config schema, and
// the credential, which is write-only: the form never holds it, not even after a refusal.
type accountData struct {
	Driver api.DriverSchema
	Name   string
	Fields []*field
	Error  string
	// NameError and CredentialError are refusals the plane pinned on those two fields.
	NameError, CredentialError string
}

func (u *UI) accountNew(w http.ResponseWriter, r *http.Request) {
	u.accountForm(w, r, chi.URLParam(r, "name"), nil)
}

// accountForm reads the driver's schema through the API and shows the form; with form set, it fills
// the fields from it and adds the account.
func (u *UI) accountForm(w http.ResponseWriter, r *http.Request, driverName string, form url.Values) {
	d := accountData{}
	var err error
	if d.Driver, err = runDrivers(u, r, api.DriversSchema, u.cfg.Drivers.Schema, driverName); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	var s schema
	if err := json.Unmarshal(d.Driver.Schema, &s); err != nil {
		u.fail(w, r, nil, errcode.Wrap(err, errcode.DriverConfigInvalid, "the config schema of %s cannot be read", d.Driver.Name))
		return
	}
	d.Fields = fields(&s, "")
	v := from(r)
	if form == nil {
		u.render(w, r, http.StatusOK, "account", &v, d)
		return
	}
	d.Name = strings.TrimSpace(form.Get("name"))
	settings, ok := fill(d.Fields, form)
	forgetSecrets(d.Fields)
	if !ok {
		d.Error = "Some values are not of their field's kind; see the marked fields."
		u.render(w, r, http.StatusBadRequest, "account", &v, d)
		return
	}
	raw, _ := json.Marshal(settings)
	req := api.AccountAdd{Driver: d.Driver.Name, Name: d.Name, Settings: raw, Credential: form.Get("credential")}
	_, err = runDrivers(u, r, api.AccountsAdd, u.cfg.Drivers.AddAccount, req)
	if err == nil {
		http.Redirect(w, r, Prefix+"/drivers", http.StatusSeeOther)
		return
	}
	if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
		u.fail(w, r, nil, err)
		return
	}
	e := errcode.From(err, errcode.InternalError)
	field, _ := e.Details[errcode.DetailField].(string)
	switch {
	case field == "name":
		d.NameError = errMessage(r, err)
	case field == "credential":
		d.CredentialError = errMessage(r, err)
	case field != "" && mark(d.Fields, field, errMessage(r, err)):
	default:
		d.Error = errMessage(r, err)
	}
	u.render(w, r, errcode.Status(e.Code), "account", &v, d)
}

func (u *UI) accountAdd(w http.ResponseWriter, r *http.Request) {
	u.accountForm(w, r, r.PostFormValue("driver"), r.PostForm)
}

// forgetSecrets drops what was typed into write-only fields, so a form shown again never holds them.
func forgetSecrets(fs []*field) {
	for _, f := range fs {
		if f.Secret {
			f.Value = ""
		}
		forgetSecrets(f.Fields)
	}
}

type auditData struct {
	Calls           []api.DriverCall
	Driver, Account string
	Cursor, Next    string
}

func (u *UI) driverAudit(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseDriversAuditQuery(r.URL.Query())
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	q.Limit = pageSize
	list, err := runDrivers(u, r, api.DriversAudit, u.cfg.Drivers.Audit, q)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "audit", auditData{Calls: list.Calls, Driver: q.Driver, Account: q.Account, Cursor: q.Cursor, Next: list.NextCursor})
}
