package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestAuditTrailOfTheUI: sign-ins (failed ones too) and every form are audit events named as the API's
// operations, with the session's token and the client's address; the trail's page lists them for an
// admin, never a secret, and a viewer may not read it.
func TestAuditTrailOfTheUI(t *testing.T) {
	p := newPlane(t)
	admin, adminTok := p.token(store.RoleAdmin)
	viewer, _ := p.token(store.RoleViewer)

	stranger := p.browser()
	stranger.get("/ui/signin", http.StatusOK)
	stranger.post("/ui/signin", url.Values{"token": {"lxt_" + strings.Repeat("a", 43)}}, http.StatusUnauthorized)

	b := p.browser()
	b.signIn(admin)
	created := b.post("/ui/tokens", url.Values{"name": {"ops-bot"}, "role": {"operator"}}, http.StatusCreated)
	secret := secretRE.FindStringSubmatch(created)[1]
	b.post("/ui/jobs/nope/cancel", nil, http.StatusNotFound)

	events := func(q store.AuditEventListParams) []store.AuditEvent {
		t.Helper()
		res, err := p.store.AuditEventList(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		return res.Events
	}
	signins := events(store.AuditEventListParams{Operation: "UISignIn"})
	if len(signins) != 2 || signins[0].Actor != adminTok.Name || signins[0].Code != store.CodeOK || signins[0].Via != store.AuditViaUI ||
		signins[1].Actor != "" || signins[1].Code != errcode.AuthRequired || signins[1].Address != "127.0.0.1" {
		t.Fatalf("sign-ins %+v", signins)
	}
	made := events(store.AuditEventListParams{Operation: api.TokensCreate.OperationID()})
	if len(made) != 1 || made[0].Actor != adminTok.Name || made[0].Status != http.StatusCreated || !strings.HasPrefix(made[0].Target, "token_") {
		t.Fatalf("the token made %+v", made)
	}
	cancelled := events(store.AuditEventListParams{Operation: api.JobsCancel.OperationID()})
	if len(cancelled) != 1 || cancelled[0].Target != "nope" || cancelled[0].Code != errcode.JobNotFound {
		t.Fatalf("the cancel %+v", cancelled)
	}

	page := b.get("/ui/audit?outcome=failed", http.StatusOK)
	if !strings.Contains(page, "JobsCancel") || strings.Contains(page, "TokensCreate") {
		t.Fatalf("the failed changes:\n%s", page)
	}
	page = b.get("/ui/audit", http.StatusOK)
	for _, s := range append([]string{secret}, p.secrets...) {
		if strings.Contains(page, s) {
			t.Fatal("the trail's page shows a secret")
		}
	}
	v := p.browser()
	v.signIn(viewer)
	if body := v.get("/ui/audit", http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Fatalf("a viewer reads the trail: %s", body)
	}
}
