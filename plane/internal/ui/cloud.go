package ui

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type cloudData struct {
	Account   string
	Info      *api.CloudAccountInfo
	Instances []api.Instance
	// Page is this page's token, Next the next one's ("" on the last page).
	Page, Next string
	// Accepted names the operation the provider just accepted, Error a refusal (on Instance).
	Accepted, Error, ErrorInstance string
}

// cloudInstances lists an account's instances as the provider reports them, a page at a time, with
// the lifecycle moves the API offers: power and reboot for operators, delete for admins with the
// instance's label typed back.
func (u *UI) cloudInstances(w http.ResponseWriter, r *http.Request) {
	u.cloudPage(w, r, http.StatusOK, cloudData{Accepted: r.URL.Query().Get("accepted")})
}

func (u *UI) cloudPage(w http.ResponseWriter, r *http.Request, status int, d cloudData) {
	d.Account = chi.URLParam(r, "account")
	q, err := api.ParseCloudInstancesQuery(r.URL.Query())
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	if r.Method != http.MethodGet {
		q = api.CloudInstancesQuery{}
	}
	var info api.CloudAccountInfo
	if err := u.route(r, api.CloudAccount, []string{d.Account}, nil, nil, &info); err == nil {
		d.Info = &info
	} else if errcode.Has(err, errcode.AuthForbidden) || errcode.Has(err, errcode.AccountNotFound) || errcode.Has(err, errcode.DriverUnavailable) {
		u.fail(w, r, nil, err)
		return
	} // a provider that cannot say who the credential is still lists instances
	var page api.InstancePage
	if err := u.route(r, api.CloudInstances, []string{d.Account}, q.Values(), nil, &page); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Instances, d.Page, d.Next = page.Instances, q.PageToken, page.NextPageToken
	v := from(r)
	u.render(w, r, status, "cloud", &v, d)
}

// cloudMove is one of the API's lifecycle routes on an instance, named by the route. Delete sends the
// label typed into its form as the confirmation; the plane compares it.
func (u *UI) cloudMove(rt api.Route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		account, id := chi.URLParam(r, "account"), chi.URLParam(r, "id")
		var body any
		if rt.String() == api.CloudDelete.String() {
			body = api.CloudDeleteRequest{Confirm: strings.TrimSpace(r.PostFormValue("confirm"))}
		}
		var acc api.CloudAccepted
		if err := u.route(r, rt, []string{account, id}, nil, body, &acc); err != nil {
			if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
				u.fail(w, r, nil, err)
				return
			}
			u.cloudPage(w, r, errcode.Status(errcode.Code(err)), cloudData{Error: errMessage(err), ErrorInstance: id})
			return
		}
		http.Redirect(w, r, Prefix+"/cloud/"+url.PathEscape(account)+"?accepted="+url.QueryEscape(acc.Operation+" "+id), http.StatusSeeOther)
	}
}
