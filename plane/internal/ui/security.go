package ui

import (
	"net/http"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

// security is the fleet security page: red rows first, each node linked to its page.
func (u *UI) security(w http.ResponseWriter, r *http.Request) {
	who, err := u.may(r, api.FleetSecurity)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	v, err := u.cfg.Security.View(r.Context(), who)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "security", v)
}
