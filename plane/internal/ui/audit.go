package ui

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
)

// audited records every form the UI takes as an audit event, named by the admin API's operation the
// form stands for, so the trail reads the same whichever way a change was asked.
func (u *UI) audited(next http.Handler) http.Handler {
	if u.cfg.Audit == nil {
		return next
	}
	return u.cfg.Audit.Wrap(next, u.describe, func(w http.ResponseWriter, r *http.Request, err error) { u.fail(w, r, nil, err) })
}

func (u *UI) describe(r *http.Request) (audit.Intent, bool) {
	// Every form changes something; the one GET that does is single sign-on's callback (a sign-in).
	if r.Method != http.MethodPost && r.URL.Path != Prefix+"/sso/callback" {
		return audit.Intent{}, false
	}
	tok := from(r).tok
	in := audit.Intent{Via: audit.ViaUI, ActorID: tok.ID, Actor: tok.Name, Address: clientAddr(r, u.cfg.TrustedProxies)}
	pattern := r.URL.Path
	if rc := chi.RouteContext(r.Context()); rc != nil {
		pattern = rc.RoutePattern()
		var vals []string
		for i, k := range rc.URLParams.Keys {
			if k != "*" {
				vals = append(vals, rc.URLParams.Values[i])
			}
		}
		in.Target = strings.Join(vals, "/")
	}
	in.Operation = uiOperation(strings.TrimPrefix(pattern, Prefix))
	return in, true
}

// uiOnly are the UI's forms that are no route of the admin API.
var uiOnly = map[string]string{
	"/signin":  "UISignIn",
	"/signout": "UISignOut",
	"/run":     api.JobsCreate.OperationID(),
}

// uiOperation names a form by the admin API route of the same path, which its handler calls the room
// of; a form that has none is named for itself.
func uiOperation(pattern string) string {
	if op, ok := uiOnly[pattern]; ok {
		return op
	}
	for _, rt := range api.Routes() {
		if rt.Mutating() && rt.Pattern == pattern {
			return rt.OperationID()
		}
	}
	return "UI POST " + pattern
}

type trailData struct {
	Events []api.AuditEvent
	Q      api.AuditListQuery
	Next   string
}

// trail is the audit trail's page: GET /audit's list with its filters, for an admin.
func (u *UI) trail(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseAuditListQuery(r.URL.Query())
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	q.Limit = pageSize
	list, err := run(u, r, api.AuditList, u.cfg.Audit.List, q)
	if err != nil {
		u.fail(w, r, nil, err)
		return
	}
	u.page(w, r, "trail", trailData{Events: list.Events, Q: q, Next: list.NextCursor})
}
