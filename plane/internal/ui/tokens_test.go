package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

var secretRE = regexp.MustCompile(`<pre id="new-secret">(lxt_[A-Za-z0-9_-]+)</pre>`)

// TestTokens makes a token on the page (its secret shown on that answer only), signs in with it, and
// revokes it on the page, which ends the session it opened. A viewer may not see the tokens.
func TestTokens(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	b.signIn(admin)
	b.get("/ui/tokens", http.StatusOK)
	created := b.post("/ui/tokens", url.Values{"name": {"ops-bot"}, "role": {"operator"}}, http.StatusCreated)
	m := secretRE.FindStringSubmatch(created)
	if m == nil {
		t.Fatalf("no secret on the answer:\n%s", created)
	}
	secret := m[1]
	if list := b.get("/ui/tokens", http.StatusOK); strings.Contains(list, secret) || !strings.Contains(list, "ops-bot") {
		t.Fatal("the token list shows the secret, or not the token")
	}
	bad := b.post("/ui/tokens", url.Values{"name": {""}, "role": {"root"}}, http.StatusUnprocessableEntity)
	if !strings.Contains(bad, errcode.TokenNameInvalid) || strings.Contains(bad, errcode.StoreParamInvalid) {
		t.Errorf("a bad token request: %s", bad)
	}
	bad = b.post("/ui/tokens", url.Values{"name": {"ok"}, "role": {"root"}}, http.StatusUnprocessableEntity)
	if !strings.Contains(bad, errcode.TokenRoleInvalid) {
		t.Errorf("a bad token role: %s", bad)
	}
	// The form's bound is the server's: a name at the bound is taken, one past it refused.
	if !strings.Contains(bad, fmt.Sprintf(`maxlength="%d"`, tokens.MaxName)) {
		t.Errorf("the form's name bound is not the room's %d", tokens.MaxName)
	}
	b.post("/ui/tokens", url.Values{"name": {strings.Repeat("n", tokens.MaxName)}, "role": {"viewer"}}, http.StatusCreated)
	b.post("/ui/tokens", url.Values{"name": {strings.Repeat("n", tokens.MaxName+1)}, "role": {"viewer"}}, http.StatusUnprocessableEntity)

	ops := p.browser()
	ops.signIn(secret)
	if who := ops.get("/ui/", http.StatusOK); !strings.Contains(who, "ops-bot (operator)") || strings.Contains(who, `href="/ui/tokens"`) {
		t.Fatal("the operator's overview")
	}
	body := ops.get("/ui/tokens", http.StatusForbidden)
	if !strings.Contains(body, errcode.AuthForbidden) {
		t.Fatalf("an operator reads the tokens: %s", body)
	}

	list := b.get("/ui/tokens", http.StatusOK)
	rm := regexp.MustCompile(`action="/ui/tokens/([^"]+)/revoke"`).FindAllStringSubmatch(list, -1)
	var revoked bool
	for _, r := range rm {
		row := list[strings.Index(list, r[0])-400 : strings.Index(list, r[0])]
		if strings.Contains(row, "ops-bot") {
			b.post("/ui/tokens/"+r[1]+"/revoke", nil, http.StatusSeeOther)
			revoked = true
		}
	}
	if !revoked {
		t.Fatalf("no revoke button for ops-bot:\n%s", list)
	}
	if res, _ := ops.do(http.MethodGet, "/ui/", nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the revoked token's session: %d", res.StatusCode)
	}
}
