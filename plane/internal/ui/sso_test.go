package ui_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/sso"
	"github.com/lexicon-fleet/lexicon/plane/internal/sso/ssotest"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// ssoPlane is a plane whose web UI and API accept people from a real OpenID Connect provider on
// loopback (zitadel/oidc's), with a clock the test moves to make a session's refresh due.
type ssoPlane struct {
	*plane
	provider *ssotest.Provider
	cli      ssotest.Client
	mu       sync.Mutex
	now      time.Time
}

var ssoPeople = map[string][]string{
	"ada":   {"fleet-admins", "staff"},
	"vic":   {"staff"},
	"nomad": {"contractors"},
}

func newSSOPlane(t *testing.T) *ssoPlane {
	t.Helper()
	st, err := open.SQLite(context.Background(), filepath.Join(t.TempDir(), "plane.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ts := httptest.NewUnstartedServer(nil) // its address is the provider's redirect, known before it serves
	t.Cleanup(ts.Close)
	base := "https://" + ts.Listener.Addr().String()
	prov, web, cli := ssotest.Start(t, ssoPeople, []string{"another-app"}, []string{base + "/ui/sso/callback"})
	cfg, err := sso.Parse([]byte(`{"issuer": "` + prov.Issuer + `", "client_id": "` + web.ID + `", "client_secret": "` + web.Secret +
		`", "cli_client_id": "` + cli.ID + `", "roles": {"fleet-admins": "admin", "staff": "viewer"}, "refresh_every": "5m"}`))
	if err != nil {
		t.Fatal(err)
	}
	signOn, err := sso.New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, seal.KeySize)
	rand.Read(raw)
	key, err := seal.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	sp := &ssoPlane{provider: prov, cli: cli, now: time.Now()}
	ts.Config.Handler = wire.New(wire.Config{Store: st, SSO: signOn, Key: key, Now: sp.clock}).Handler()
	ts.StartTLS()
	sp.plane = &plane{t: t, store: st, ts: ts}
	return sp
}

func (sp *ssoPlane) clock() time.Time {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.now
}

func (sp *ssoPlane) advance(d time.Duration) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.now = sp.now.Add(d)
}

// signInAs walks a browser through the plane's single sign-on and the provider's login page.
func (sp *ssoPlane) signInAs(b *browser, user string) (*http.Response, string) {
	sp.t.Helper()
	if body := b.get("/ui/signin", http.StatusOK); !strings.Contains(body, `href="/ui/sso/start"`) {
		sp.t.Fatalf("the sign-in page offers no single sign-on:\n%s", body)
	}
	res, _ := b.do(http.MethodGet, "/ui/sso/start", nil)
	loc, err := res.Location()
	if res.StatusCode != http.StatusSeeOther || err != nil || !strings.HasPrefix(loc.String(), sp.provider.Issuer) {
		sp.t.Fatalf("/ui/sso/start: %d to %v", res.StatusCode, loc)
	}
	if loc.Query().Get("code_challenge_method") != "S256" || loc.Query().Get("code_challenge") == "" {
		sp.t.Fatalf("the sign-in does not use PKCE: %s", loc)
	}
	back := ssotest.SignIn(sp.t, b.c, loc.String(), user)
	return b.do(http.MethodGet, back.RequestURI(), nil)
}

// TestSSOSignIn: a person signs in through the provider's login page and acts with the role their
// groups map to; a viewer cannot approve a join; a person in no mapped group is refused; a callback
// whose state is not the browser's is refused.
func TestSSOSignIn(t *testing.T) {
	sp := newSSOPlane(t)
	ada := sp.browser()
	// The callback answers a page of the plane's own that moves on to the overview, not a redirect: a
	// browser sends no SameSite=Strict cookie on a redirect from a navigation the provider's site began.
	if res, body := sp.signInAs(ada, "ada"); res.StatusCode != http.StatusOK || res.Header.Get("Location") != "" ||
		res.Header.Get("Cache-Control") != "no-store" || !strings.Contains(body, `<meta http-equiv="refresh" content="0;url=/ui/">`) {
		t.Fatalf("callback: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if body := ada.get("/ui/", http.StatusOK); !strings.Contains(body, "ada@example.com") {
		t.Fatalf("the overview does not name the person signed in:\n%s", body)
	}
	j := sp.pending("sso-target")
	ada.get("/ui/joins", http.StatusOK)
	ada.post("/ui/joins/"+j.ID+"/approve", url.Values{"fingerprint": {j.Fingerprint}}, http.StatusSeeOther)

	vic := sp.browser()
	sp.signInAs(vic, "vic")
	k := sp.pending("sso-target-2")
	vic.get("/ui/joins", http.StatusOK)
	if body := vic.post("/ui/joins/"+k.ID+"/approve", url.Values{"fingerprint": {k.Fingerprint}}, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Fatalf("a viewer's approval: %s", body)
	}
	if got, _ := sp.store.JoinGet(context.Background(), store.JoinGetParams{ID: k.ID}); got.Status != store.JoinPending {
		t.Fatalf("the join after a viewer's approval: %s", got.Status)
	}

	nomad := sp.browser()
	res, _ := sp.signInAs(nomad, "nomad")
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("a person in no mapped group: %d", res.StatusCode)
	}
	nomad.get("/ui/", http.StatusSeeOther)

	// A callback that did not start in this browser: no state cookie.
	stranger := sp.browser()
	if body := stranger.get("/ui/sso/callback?code=x&state=y", http.StatusUnauthorized); !strings.Contains(body, errcode.SSORefused) {
		t.Fatalf("a callback from nowhere: %s", body)
	}
}

// TestSSORefreshFollowsTheProvider: when a session's refresh is due, the plane asks the provider again:
// a person moved to another group acts with its role, and one removed from every mapped group is
// signed out at that refresh (not before, not after).
func TestSSORefreshFollowsTheProvider(t *testing.T) {
	sp := newSSOPlane(t)
	ada := sp.browser()
	sp.signInAs(ada, "ada")
	sp.provider.SetGroups("ada", "staff")
	before := sp.pending("before-refresh") // the refresh is not due: the session keeps its role
	ada.get("/ui/joins", http.StatusOK)
	ada.post("/ui/joins/"+before.ID+"/approve", url.Values{"fingerprint": {before.Fingerprint}}, http.StatusSeeOther)
	sp.advance(6 * time.Minute)
	j := sp.pending("after-refresh")
	ada.get("/ui/joins", http.StatusOK)
	ada.post("/ui/joins/"+j.ID+"/approve", url.Values{"fingerprint": {j.Fingerprint}}, http.StatusForbidden)

	sp.provider.SetGroups("ada")
	ada.get("/ui/", http.StatusOK) // the next refresh is not due yet
	sp.advance(6 * time.Minute)
	res, _ := ada.do(http.MethodGet, "/ui/", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/signin" {
		t.Fatalf("after the person left every group: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
}

// TestSSOBearer: an ID token the provider issued to the CLI's client is a bearer on the admin API, and
// acts as the person; one from another provider, or issued to another client, is refused.
func TestSSOBearer(t *testing.T) {
	sp := newSSOPlane(t)
	tok := idToken(t, sp.provider.Issuer, sp.cli.ID, "", "ada")
	var who api.Token
	if code := sp.api(t, tok, &who); code != http.StatusOK || who.Name != "ada@example.com" || who.Role != api.RoleAdmin {
		t.Fatalf("whoami with ada's ID token: %d %+v", code, who)
	}

	other, _, otherCLI := ssotest.Start(t, ssoPeople, nil, nil)
	var env struct{ Error struct{ Code string } }
	if code := sp.api(t, idToken(t, other.Issuer, otherCLI.ID, "", "ada"), &env); code != http.StatusUnauthorized || env.Error.Code != errcode.SSORefused {
		t.Fatalf("a token from another issuer: %d %+v", code, env)
	}
	aud := sp.provider.OtherClient("another-app")
	if code := sp.api(t, idToken(t, sp.provider.Issuer, aud, "other-secret", "ada"), &env); code != http.StatusUnauthorized || env.Error.Code != errcode.SSORefused {
		t.Fatalf("a token for another audience: %d %+v", code, env)
	}
	if code := sp.api(t, idToken(t, sp.provider.Issuer, sp.cli.ID, "", "nomad"), &env); code != http.StatusForbidden || env.Error.Code != errcode.SSONoRole {
		t.Fatalf("a person in no mapped group: %d %+v", code, env)
	}
}

func (sp *ssoPlane) api(t *testing.T, bearer string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, sp.ts.URL+api.Prefix+api.Whoami.Pattern, nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	res, err := sp.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode
}

// idToken signs user in at the provider through client (a loopback redirect that nothing serves: the
// code is read from where the provider sends the browser) and returns the ID token it issues.
func idToken(t *testing.T, issuer, client, secret, user string) string {
	t.Helper()
	p, err := oidc.NewProvider(context.Background(), issuer)
	if err != nil {
		t.Fatal(err)
	}
	conf := oauth2.Config{ClientID: client, ClientSecret: secret, RedirectURL: ssotest.LoopbackRedirect, Endpoint: p.Endpoint(),
		Scopes: []string{"openid", "profile", "email"}}
	verifier := oauth2.GenerateVerifier()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	back := ssotest.SignIn(t, c, conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)), user)
	tok, err := conf.Exchange(context.Background(), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("no id_token")
	}
	return raw
}
