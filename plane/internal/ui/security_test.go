package ui_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestCriticalForm: the security page offers an admin the critical package list; a list saved from it
// is stored and shown with who set it, a bad pattern is shown with what was typed and changes
// nothing, reset goes back to the plane's own list, and each is in the audit trail under the API
// route's name; an operator is not offered it and is refused.
func TestCriticalForm(t *testing.T) {
	p := newTrusted(t)
	admin, _ := p.token(store.RoleAdmin)
	operator, _ := p.token(store.RoleOperator)
	a := p.browser()
	a.signIn(admin)
	page := a.get("/ui/security", http.StatusOK)
	if !strings.Contains(page, `id="critical-form"`) || !strings.Contains(page, "The plane's own list") || strings.Contains(page, `id="critical-reset"`) {
		t.Fatalf("the security page of an admin:\n%s", page)
	}
	a.post("/ui/fleet/security/critical", url.Values{"critical": {"liblexfix1, linux-image-*"}}, http.StatusSeeOther)
	set, err := p.store.SecuritySettingsGet(t.Context())
	if err != nil || !set.Set || !slices.Equal(set.Critical, []string{"liblexfix1", "linux-image-*"}) {
		t.Fatalf("after save: %+v %v", set, err)
	}
	page = a.get("/ui/security", http.StatusOK)
	if !strings.Contains(page, "Critical packages: liblexfix1, linux-image-*.") || !strings.Contains(page, `id="critical-reset"`) {
		t.Fatalf("the page after save:\n%s", page)
	}
	refused := a.post("/ui/fleet/security/critical", url.Values{"critical": {"libssl, Open[SSL"}}, http.StatusBadRequest)
	if !strings.Contains(refused, `id="critical-error"`) || !strings.Contains(refused, `value="libssl, Open[SSL"`) {
		t.Fatalf("a refused list:\n%s", refused)
	}
	if set, _ := p.store.SecuritySettingsGet(t.Context()); len(set.Critical) != 2 {
		t.Fatalf("a refused list changed the stored one: %+v", set)
	}
	a.post("/ui/fleet/security/critical", url.Values{"reset": {"1"}}, http.StatusSeeOther)
	if set, _ := p.store.SecuritySettingsGet(t.Context()); set.Set {
		t.Fatalf("after reset: %+v", set)
	}
	trail, err := p.store.AuditEventList(t.Context(), store.AuditEventListParams{Operation: "FleetSecurityCriticalSet"})
	if err != nil || len(trail.Events) != 3 {
		t.Fatalf("the trail: %+v %v", trail, err)
	}
	o := p.browser()
	o.signIn(operator)
	if page := o.get("/ui/security", http.StatusOK); strings.Contains(page, `id="critical-form"`) {
		t.Fatal("an operator is offered the critical list")
	}
	if body := o.post("/ui/fleet/security/critical", url.Values{"critical": {"curl"}}, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Errorf("an operator's save: %s", body)
	}
}
