package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// provisionStates are the states a provisioning goes through, for the list's filter.
var provisionStates = []string{api.ProvCreating, api.ProvBooting, api.ProvInstalling, api.ProvJoining, api.ProvJoined, api.ProvFailed, api.ProvCleanedUp}

type provisioningsData struct {
	Provisionings []api.Provisioning
	State         string
	Open          bool
	States        []string
	// CloudAccounts and DNSAccounts are the form's choices (admins only: the route is theirs).
	CloudAccounts, DNSAccounts []api.Account
	// Form is what a refused provision form held, shown again with Error (or FieldError next to
	// the field the plane named).
	Form               url.Values
	Error              string
	ErrorField         string
	DriversUnavailable string
}

func (u *UI) provisionings(w http.ResponseWriter, r *http.Request) {
	u.provisioningsPage(w, r, http.StatusOK, provisioningsData{Form: url.Values{}})
}

func (u *UI) provisioningsPage(w http.ResponseWriter, r *http.Request, status int, d provisioningsData) {
	q, err := api.ParseProvisioningsListQuery(r.URL.Query())
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	q.Limit = 100
	list, err := run(u, r, api.ProvisioningsList, u.cfg.Provision.List, q)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Provisionings, d.State, d.Open, d.States = list.Provisionings, q.State, q.Open, provisionStates
	v := from(r)
	if v.tok.Role.Covers(api.RoleAdmin) {
		accounts, err := runDrivers(u, r, api.AccountsList, u.cfg.Drivers.Accounts, api.AccountsListQuery{})
		if errcode.Has(err, errcode.DriverUnavailable) {
			d.DriversUnavailable = errMessage(r, err)
		} else if err != nil {
			u.fail(w, r, nil, err)
			return
		}
		for _, a := range accounts.Accounts {
			switch {
			case strings.HasPrefix(a.Driver, "cloud-"):
				d.CloudAccounts = append(d.CloudAccounts, a)
			case strings.HasPrefix(a.Driver, "dns-"):
				d.DNSAccounts = append(d.DNSAccounts, a)
			}
		}
	}
	u.render(w, r, status, "provisionings", &v, d)
}

// provisionStart reads the provision form into the API's request; the plane checks the rest (name,
// account, region and type asked of the provider), as for `lexicon nodes provision`.
func (u *UI) provisionStart(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	req := api.ProvisionRequest{Name: strings.TrimSpace(f.Get("name")), Account: strings.TrimSpace(f.Get("account")),
		Region: strings.TrimSpace(f.Get("region")), Type: strings.TrimSpace(f.Get("type")), Image: strings.TrimSpace(f.Get("image")),
		Platform: strings.TrimSpace(f.Get("platform")), DNSAccount: strings.TrimSpace(f.Get("dns_account")), Zone: strings.TrimSpace(f.Get("zone"))}
	labels, bad := labelsOf(f.Get("labels"))
	if bad != "" {
		u.provisioningsPage(w, r, http.StatusBadRequest, provisioningsData{Form: f, ErrorField: "labels",
			Error: "Labels are key=value, separated by commas or lines: " + bad})
		return
	}
	req.Labels = labels
	pr, err := run(u, r, api.NodesProvision, u.cfg.Provision.Provision, req)
	if err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		field, _ := errcode.From(err, errcode.InternalError).Details[errcode.DetailField].(string)
		u.provisioningsPage(w, r, errcode.Status(errcode.Code(err)), provisioningsData{Form: f, Error: errMessage(r, err), ErrorField: field})
		return
	}
	http.Redirect(w, r, Prefix+"/provisionings/"+url.PathEscape(pr.ID), http.StatusSeeOther)
}

type provisioningData struct {
	api.Provisioning
}

// Live reports whether the provisioning can still move by itself, so the page offers a refresh.
func (d provisioningData) Live() bool { return !d.Final() }

// Labels are the provisioning's labels in a stable order.
func (d provisioningData) LabelList() []string {
	var out []string
	for k, v := range d.Labels {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func (u *UI) provisioning(w http.ResponseWriter, r *http.Request) {
	var d provisioningData
	var err error
	if d.Provisioning, err = run(u, r, api.ProvisioningsShow, u.cfg.Provision.Show, chi.URLParam(r, "id")); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "provisioning", d)
}

// labelsOf reads a form's labels, key=value separated by commas or lines; bad is the first entry that
// is not one.
func labelsOf(s string) (labels map[string]string, bad string) {
	for _, l := range list(s) {
		k, val, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, l
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = val
	}
	return labels, ""
}
