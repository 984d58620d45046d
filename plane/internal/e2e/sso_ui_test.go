package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/lexicon-fleet/lexicon/plane/internal/sso/ssotest"
)

// TestSSOWebUI signs people in through a real OpenID Connect provider (zitadel/oidc's, on loopback) in
// headless Chromium against the real lexicon-plane binary started with --sso: the sign-in page's
// single sign-on link leads to the provider's login page; typed there, the browser comes back to the
// overview as the person with the role their groups map to; sign out ends the session, and the next
// person lands with theirs. An admin sees the forms to change things, a viewer none.
func TestSSOWebUI(t *testing.T) {
	t.Parallel() // waits mostly (on intervals, a browser, a machine): it overlaps the others that do
	ctx := chromium(t)
	port := freePort(t) // the provider must know the plane's callback before the plane starts
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	prov, web, _ := ssotest.Start(t, map[string][]string{"ada": {"fleet-admins", "staff"}, "vic": {"staff"}}, nil,
		[]string{base + "/ui/sso/callback"})
	cfg, err := json.Marshal(map[string]any{"issuer": prov.Issuer, "client_id": web.ID, "client_secret": web.Secret,
		"roles": map[string]string{"fleet-admins": "admin", "staff": "viewer"}})
	must(t, err)
	ssoFile := filepath.Join(t.TempDir(), "sso.json")
	must(t, os.WriteFile(ssoFile, cfg, 0o600))
	f := newFleet(t, "sqlite", fleetOptions{serveArgs: []string{"--sso", ssoFile}, listen: fmt.Sprintf("127.0.0.1:%d", port)})
	ui := base + "/ui"

	signIn := func(user string) {
		t.Helper()
		browse(t, ctx, chromedp.Navigate(ui+"/"), chromedp.WaitVisible(chromedp.CSS(`a[href="/ui/sso/start"]`)),
			chromedp.Click(chromedp.CSS(`a[href="/ui/sso/start"]`)),
			chromedp.WaitVisible(chromedp.CSS("#username")))
		if loc := value(t, ctx, chromedp.Location()); !strings.HasPrefix(loc, prov.Issuer) {
			t.Fatalf("the single sign-on link led to %s, not the provider %s", loc, prov.Issuer)
		}
		browse(t, ctx,
			chromedp.SendKeys(chromedp.CSS("#username"), user),
			chromedp.SendKeys(chromedp.CSS("#password"), ssotest.Password),
			chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS("#node-states")))
		if loc := value(t, ctx, chromedp.Location()); loc != ui+"/" {
			t.Fatalf("after signing in as %s the browser is at %s, not the overview", user, loc)
		}
	}
	signOut := func() {
		t.Helper()
		browse(t, ctx, chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS(`a[href="/ui/sso/start"]`)))
		// The session is gone, not only the page: the overview sends the browser back to sign in.
		browse(t, ctx, chromedp.Navigate(ui+"/"), chromedp.WaitVisible(chromedp.CSS(`a[href="/ui/sso/start"]`)))
	}

	signIn("ada")
	if who := textOf(t, ctx, "#who"); who != "ada@example.com (admin)" {
		t.Fatalf("signed in as %q, want ada@example.com (admin)", who)
	}
	browse(t, ctx, chromedp.Navigate(ui+"/machines"), chromedp.WaitVisible(chromedp.CSS("#machine-form")))
	signOut()

	signIn("vic")
	if who := textOf(t, ctx, "#who"); who != "vic@example.com (viewer)" {
		t.Fatalf("signed in as %q, want vic@example.com (viewer)", who)
	}
	browse(t, ctx, chromedp.Navigate(ui+"/machines"), chromedp.WaitVisible(chromedp.CSS("#machines")))
	if value(t, ctx, chromedp.Evaluate[bool](`document.getElementById("machine-form") !== null`)) {
		t.Fatal("a viewer signed in through the provider is shown the form to write a machine down")
	}
	signOut()
	if strings.Contains(f.planeLog.String(), web.Secret) {
		t.Fatal("the plane's log holds the client secret")
	}
}
