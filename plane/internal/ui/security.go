package ui

import (
	"net/http"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type securityData struct {
	api.SecurityView
	// Crit is the critical list in force, where it comes from, and the plane's own (in force after a
	// reset).
	Crit api.SecurityCritical
	// Form is what a refused list held, shown again with Error.
	Form  string
	Error string
}

// security is the fleet security page: red rows first, each node linked to its page.
func (u *UI) security(w http.ResponseWriter, r *http.Request) {
	u.securityPage(w, r, http.StatusOK, securityData{})
}

func (u *UI) securityPage(w http.ResponseWriter, r *http.Request, status int, d securityData) {
	who, err := u.may(r, api.FleetSecurity)
	if err == nil {
		d.SecurityView, err = u.cfg.Security.View(r.Context(), who)
	}
	if err == nil {
		d.Crit, err = u.cfg.Security.Critical(r.Context(), who)
	}
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	if d.Form == "" && d.Error == "" {
		d.Form = strings.Join(d.Crit.Critical, ", ")
	}
	v := from(r)
	u.render(w, r, status, "security", &v, d)
}

// securityCritical sets the critical package list from the page's form (patterns split on commas and
// spaces; "reset" goes back to the plane's own), through the API's route and role; a refusal is shown
// with what was typed.
func (u *UI) securityCritical(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	req := api.SecurityCriticalRequest{Critical: []string{}, Reset: f.Get("reset") != ""}
	if !req.Reset {
		req.Critical = append(req.Critical, strings.FieldsFunc(f.Get("critical"), func(c rune) bool { return c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t' })...)
	}
	if _, err := run(u, r, api.FleetSecurityCriticalSet, u.cfg.Security.CriticalSet, req); err != nil {
		if errcode.Has(err, errcode.AuthForbidden) || errcode.Code(err) == "" {
			u.fail(w, r, nil, err)
			return
		}
		u.securityPage(w, r, errcode.Status(errcode.Code(err)), securityData{Form: f.Get("critical"), Error: errMessage(r, err)})
		return
	}
	http.Redirect(w, r, Prefix+"/security", http.StatusSeeOther)
}
