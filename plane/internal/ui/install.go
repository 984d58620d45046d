package ui

import (
	"net/http"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type installData struct {
	Command         *api.InstallCommand
	Labels, Expires string
	Approve         bool
	Error           string
}

// installPage is the form that makes an install command, as `lexicon nodes install-command` does.
func (u *UI) installPage(w http.ResponseWriter, r *http.Request) {
	if _, err := u.may(r, api.NodesInstallCommand); err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "install", installData{Approve: true})
}

// installMake makes the command and shows it once; the page is not stored by any cache.
func (u *UI) installMake(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	d := installData{Labels: strings.TrimSpace(f.Get("labels")), Expires: strings.TrimSpace(f.Get("expires")), Approve: f.Get("approve") == "true"}
	v := from(r)
	labels, bad := labelsOf(d.Labels)
	if bad != "" {
		d.Error = "Labels are key=value, separated by commas or lines: " + bad
		u.render(w, r, http.StatusBadRequest, "install", &v, d)
		return
	}
	approve := d.Approve
	cmd, err := run(u, r, api.NodesInstallCommand, u.cfg.Provision.InstallCommand,
		api.InstallCommandRequest{Labels: labels, ExpiresIn: d.Expires, Approve: &approve})
	if err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		d.Error = errMessage(r, err)
		u.render(w, r, errcode.Status(errcode.Code(err)), "install", &v, d)
		return
	}
	d.Command = &cmd
	u.render(w, r, http.StatusCreated, "install", &v, d)
}
