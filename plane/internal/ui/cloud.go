package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
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
	if info, err := runDrivers(u, r, api.CloudAccount, u.cfg.Drivers.Account, d.Account); err == nil {
		d.Info = &info
	} else if errcode.Has(err, errcode.AuthForbidden) || errcode.Has(err, errcode.AccountNotFound) || errcode.Has(err, errcode.DriverUnavailable) {
		u.fail(w, r, nil, err)
		return
	} // a provider that cannot say who the credential is still lists instances
	page, err := runDrivers(u, r, api.CloudInstances, func(ctx context.Context, who api.Token, q api.CloudInstancesQuery) (api.InstancePage, error) {
		return u.cfg.Drivers.Instances(ctx, who, d.Account, q)
	}, q)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	d.Instances, d.Page, d.Next = page.Instances, q.PageToken, page.NextPageToken
	v := from(r)
	u.render(w, r, status, "cloud", &v, d)
}

// cloudMove is one of the API's lifecycle calls on an instance, named by its route: call is the
// drivers room's method, and answers the operation the provider accepted. Delete sends the label typed
// into its form as the confirmation; the plane compares it.
func (u *UI) cloudMove(rt api.Route, call func(ctx context.Context, who api.Token, account, id string, form url.Values) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		account, id := chi.URLParam(r, "account"), chi.URLParam(r, "id")
		if raw, err := url.PathUnescape(id); err == nil {
			id = raw // provider ids may hold a slash, escaped in the one segment
		}
		op, err := runDrivers(u, r, rt, func(ctx context.Context, who api.Token, form url.Values) (string, error) {
			return call(ctx, who, account, id, form)
		}, r.PostForm)
		if err != nil {
			if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
				u.fail(w, r, nil, err)
				return
			}
			u.cloudPage(w, r, errcode.Status(errcode.Code(err)), cloudData{Error: errMessage(r, err), ErrorInstance: id})
			return
		}
		http.Redirect(w, r, Prefix+"/cloud/"+url.PathEscape(account)+"?accepted="+url.QueryEscape(op+" "+id), http.StatusSeeOther)
	}
}

// accepted adapts a drivers room call that answers api.CloudAccepted to cloudMove.
func accepted(f func(context.Context, api.Token, string, string) (api.CloudAccepted, error)) func(context.Context, api.Token, string, string, url.Values) (string, error) {
	return func(ctx context.Context, who api.Token, account, id string, _ url.Values) (string, error) {
		acc, err := f(ctx, who, account, id)
		return acc.Operation, err
	}
}

// cloudDelete is the drivers room's delete as cloudMove calls it, the typed label as its confirmation.
func (u *UI) cloudDelete(ctx context.Context, who api.Token, account, id string, form url.Values) (string, error) {
	_, err := u.cfg.Drivers.Delete(ctx, who, account, id, api.CloudDeleteRequest{Confirm: strings.TrimSpace(form.Get("confirm"))})
	return store.OpCloudDelete, err
}
