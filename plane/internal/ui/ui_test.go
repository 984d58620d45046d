package ui_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/ui"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// plane is a plane's HTTP surface on a real SQLite store, over TLS as the UI's Secure cookies need.
type plane struct {
	t     testing.TB
	store store.Store
	ts    *httptest.Server
	// secrets are every token made, for the test that no page shows one.
	secrets []string
}

func newPlane(t testing.TB) *plane {
	t.Helper()
	return newPlaneWith(t, wire.Config{})
}

// newPlaneWith is newPlane with more of the server's configuration; the store is made here.
func newPlaneWith(t testing.TB, cfg wire.Config) *plane {
	t.Helper()
	st, err := open.SQLite(context.Background(), filepath.Join(t.TempDir(), "plane.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newPlaneOn(t, st, cfg)
}

// newPlaneOn is newPlaneWith on a store already open.
func newPlaneOn(t testing.TB, st store.Store, cfg wire.Config) *plane {
	t.Helper()
	cfg.Store = st
	ts := httptest.NewTLSServer(wire.New(cfg).Handler())
	t.Cleanup(ts.Close)
	return &plane{t: t, store: st, ts: ts}
}

func (p *plane) token(role store.Role) (string, store.Token) {
	p.t.Helper()
	raw, hash := tokens.Mint()
	tok, err := p.store.TokenCreate(context.Background(), store.TokenCreateParams{Name: "ui-" + string(role), Role: role, Hash: hash, Now: time.Now()})
	if err != nil {
		p.t.Fatal(err)
	}
	p.secrets = append(p.secrets, raw, hash)
	return raw, tok
}

// browser is a cookie-keeping client that does not follow redirects, so the tests see each answer.
type browser struct {
	p    *plane
	c    *http.Client
	csrf string
	// pages holds every page body the browser was given.
	pages map[string]string
}

func (p *plane) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := new(http.Client)
	*c = *p.ts.Client() // its own jar: the test server's client is one shared value
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{p: p, c: c, pages: map[string]string{}}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) do(method, path string, form url.Values) (*http.Response, string) {
	b.p.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.p.ts.URL+path, body)
	if err != nil {
		b.p.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.p.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if m := csrfRE.FindStringSubmatch(string(data)); m != nil {
		b.csrf = m[1]
	}
	b.pages[method+" "+path] = string(data)
	return res, string(data)
}

func (b *browser) get(path string, want int) string {
	b.p.t.Helper()
	res, body := b.do(http.MethodGet, path, nil)
	if res.StatusCode != want {
		b.p.t.Fatalf("GET %s: %d, want %d\n%s", path, res.StatusCode, want, body)
	}
	return body
}

func (b *browser) post(path string, form url.Values, want int) string {
	b.p.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	}
	res, body := b.do(http.MethodPost, path, form)
	if res.StatusCode != want {
		b.p.t.Fatalf("POST %s: %d, want %d\n%s", path, res.StatusCode, want, body)
	}
	return body
}

func (b *browser) signIn(token string) {
	b.p.t.Helper()
	b.get("/ui/signin", http.StatusOK)
	b.post("/ui/signin", url.Values{"token": {token}}, http.StatusSeeOther)
	b.get("/ui/", http.StatusOK)
}

// pending makes a join request waiting for approval.
func (p *plane) pending(name string) store.Join {
	p.t.Helper()
	pub := keys.NewNode().Public()
	res, err := p.store.JoinCreate(context.Background(), store.JoinCreateParams{Name: name, Key: pub.String(), Fingerprint: pub.Fingerprint(), SourceAddress: "192.0.2.1",
		MaxPending: 100, MaxPendingPerSource: 100, Now: time.Now()})
	if err != nil {
		p.t.Fatal(err)
	}
	return res.Join
}

func TestHeadersOnEveryResponse(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	check := func(what string, res *http.Response, data bool) {
		t.Helper()
		if got := res.Header.Get("Content-Security-Policy"); got != ui.CSP {
			t.Errorf("%s: CSP %q", what, got)
		}
		if got := res.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s: X-Frame-Options %q", what, got)
		}
		if data && res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", what, res.Header.Get("Cache-Control"))
		}
	}
	res, _ := b.do(http.MethodGet, "/ui/signin", nil)
	check("signin", res, true)
	res, _ = b.do(http.MethodGet, "/ui/static/ui.css", nil)
	check("static", res, false)
	res, _ = b.do(http.MethodGet, "/ui/", nil)
	check("signed out", res, false)
	res, _ = b.do(http.MethodPost, "/ui/signin", url.Values{"token": {admin}})
	check("signin without csrf", res, true)
	b.signIn(admin)
	for _, path := range []string{"/ui/", "/ui/joins", "/ui/nodes", "/ui/jobs", "/ui/incidents", "/ui/run", "/ui/tokens", "/ui/releases", "/ui/releases/diff", "/ui/rollouts", "/ui/drivers", "/ui/drivers/audit", "/ui/plane", "/ui/nosuch", "/ui/jobs/nosuch"} {
		res, _ := b.do(http.MethodGet, path, nil)
		check(path, res, true)
	}
	res, _ = b.do(http.MethodPost, "/ui/joins/x/reject", url.Values{})
	check("csrf refusal", res, true)
}

func TestCSRF(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	b.get("/ui/signin", http.StatusOK)
	body := b.post("/ui/signin", url.Values{"token": {admin}, "csrf": {"forged"}}, http.StatusForbidden)
	if !strings.Contains(body, errcode.AuthCSRF) {
		t.Errorf("sign-in with a wrong CSRF token: %s", body)
	}
	b.signIn(admin)
	j := p.pending("csrf-target")
	for name, form := range map[string]url.Values{
		"missing": {"fingerprint": {j.Fingerprint}},
		"wrong":   {"fingerprint": {j.Fingerprint}, "csrf": {"not-the-token"}},
	} {
		res, body := b.do(http.MethodPost, "/ui/joins/"+j.ID+"/approve", form)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(body, errcode.AuthCSRF) {
			t.Errorf("%s CSRF token: %d\n%s", name, res.StatusCode, body)
		}
	}
	// A cross-site request with the right token is refused too: the browser says where it came from.
	req, _ := http.NewRequest(http.MethodPost, p.ts.URL+"/ui/joins/"+j.ID+"/approve", strings.NewReader(url.Values{"fingerprint": {j.Fingerprint}, "csrf": {b.csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	res, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d", res.StatusCode)
	}
	got, err := p.store.JoinGet(context.Background(), store.JoinGetParams{ID: j.ID})
	if err != nil || got.Status != store.JoinPending {
		t.Fatalf("the join after refused approvals: %v %v", got.Status, err)
	}
}

func TestSessionEndsWithItsToken(t *testing.T) {
	p := newPlane(t)
	admin, tok := p.token(store.RoleAdmin)
	b := p.browser()
	b.signIn(admin)
	if _, err := p.store.TokenRevoke(context.Background(), store.TokenRevokeParams{ID: tok.ID, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	res, _ := b.do(http.MethodGet, "/ui/", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/signin" {
		t.Fatalf("after revoking the token: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	res, _ = b.do(http.MethodPost, "/ui/signout", url.Values{"csrf": {b.csrf}})
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST after revoking the token: %d", res.StatusCode)
	}
	b.get("/ui/signin", http.StatusOK)
	body := b.post("/ui/signin", url.Values{"token": {admin}}, http.StatusUnauthorized)
	if !strings.Contains(body, "unknown or revoked") {
		t.Errorf("signing in with a revoked token: %s", body)
	}
}

func TestSignOut(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	b.signIn(admin)
	cookie := b.c.Jar.Cookies(mustURL(t, p.ts.URL+"/ui/"))
	b.post("/ui/signout", nil, http.StatusSeeOther)
	res, _ := b.do(http.MethodGet, "/ui/", nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after sign-out: %d", res.StatusCode)
	}
	// The old cookie, replayed, opens nothing: the session is gone on the server.
	old := p.browser()
	old.c.Jar.SetCookies(mustURL(t, p.ts.URL+"/ui/"), cookie)
	res, _ = old.do(http.MethodGet, "/ui/", nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the signed-out cookie replayed: %d", res.StatusCode)
	}
}

func TestSessionCookie(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	b.get("/ui/signin", http.StatusOK)
	res, _ := b.do(http.MethodPost, "/ui/signin", url.Values{"token": {admin}, "csrf": {b.csrf}})
	var found bool
	for _, c := range res.Cookies() {
		if c.Name != "lexicon_session" {
			continue
		}
		found = true
		if !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Expires.IsZero() || c.Path != "/ui" {
			t.Errorf("session cookie %+v", c)
		}
		if strings.Contains(c.Value, admin) {
			t.Error("the session cookie holds the token")
		}
	}
	if !found {
		t.Fatal("no session cookie")
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var postForm = regexp.MustCompile(`(?i)<form[^>]*method="post"[^>]*action="([^"]+)"`)

func TestViewerChangesNothing(t *testing.T) {
	p := newPlane(t)
	viewer, _ := p.token(store.RoleViewer)
	j := p.pending("viewer-target")
	n := storetest.Node(t, p.store, "web-1", "0.1.0", time.Now())
	inc := p.incident(n, "disk full")
	job := p.job(n, `{"ok":true}`)
	b := p.browser()
	b.signIn(viewer)
	for _, path := range []string{"/ui/", "/ui/joins", "/ui/nodes", "/ui/nodes/" + n.ID, "/ui/jobs", "/ui/jobs/" + job.ID, "/ui/incidents", "/ui/incidents/" + inc} {
		body := b.get(path, http.StatusOK)
		for _, m := range postForm.FindAllStringSubmatch(body, -1) {
			if m[1] != "/ui/signout" {
				t.Errorf("%s offers a viewer the form %s", path, m[1])
			}
		}
	}
	b.get("/ui/joins", http.StatusOK) // the csrf token of this session
	for path, form := range map[string]url.Values{
		"/ui/joins/" + j.ID + "/approve":   {"fingerprint": {j.Fingerprint}},
		"/ui/joins/" + j.ID + "/reject":    {},
		"/ui/incidents/" + inc + "/triage": {"triage": {"resolved"}},
		"/ui/incidents/" + inc + "/notes":  {"text": {"mine"}},
		"/ui/run":                          {"node": {n.ID}, "word": {"w"}},
	} {
		body := b.post(path, form, http.StatusForbidden)
		if !strings.Contains(body, errcode.AuthForbidden) {
			t.Errorf("viewer POST %s: %s", path, body)
		}
	}
	got, err := p.store.JoinGet(context.Background(), store.JoinGetParams{ID: j.ID})
	if err != nil || got.Status != store.JoinPending {
		t.Fatalf("the join after a viewer's POSTs: %v %v", got.Status, err)
	}
}

// incident opens an incident from a node's case and returns its id.
func (p *plane) incident(n store.Node, summary string) string {
	p.t.Helper()
	ctx := context.Background()
	now := time.Now()
	if _, err := p.store.CaseIntake(ctx, store.CaseIntakeParams{NodeID: n.ID, Now: now, Cases: []store.CaseReport{
		{ID: 1, Recipe: "disk_space", State: store.CaseOpen, OpenedAt: now, Summary: summary},
	}}); err != nil {
		p.t.Fatal(err)
	}
	list, err := p.store.IncidentList(ctx, store.IncidentListParams{NodeID: n.ID, Now: now})
	if err != nil || len(list.Incidents) == 0 {
		p.t.Fatalf("no incident from the case: %v", err)
	}
	return list.Incidents[0].ID
}

// job runs a job to completion with output as the node's answer.
func (p *plane) job(n store.Node, output string) store.Job {
	p.t.Helper()
	ctx := context.Background()
	j, err := p.store.JobCreate(ctx, store.JobCreateParams{NodeID: n.ID, Word: "w", WordDigest: n.Vocabulary[0].Digest, Class: "look", Params: []byte(`{}`), CreatedBy: "test", Now: time.Now()})
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.store.JobClaim(ctx, store.JobClaimParams{NodeID: n.ID, Now: time.Now()}); err != nil {
		p.t.Fatal(err)
	}
	j, err = p.store.JobFinish(ctx, store.JobFinishParams{ID: j.ID, NodeID: n.ID, Outcome: store.JobCompleted, Output: []byte(output), Transcript: output, Now: time.Now()})
	if err != nil {
		p.t.Fatal(err)
	}
	return j
}

const attack = `<script>alert(1)</script><img src=x onerror=alert(2)>`

func TestHTMLInjectionRendersAsText(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	// A node's name is held to letters, digits, '.', '_' and '-' by the store; what a node reports
	// of itself (its agent version), a case's summary, a note and a word's output are free text.
	if _, err := p.store.JoinCreate(context.Background(), store.JoinCreateParams{Name: attack, Key: "k", Fingerprint: "f", SourceAddress: "x", MaxPending: 9, MaxPendingPerSource: 9}); err == nil {
		t.Fatal("the store took a node name holding HTML")
	}
	n := storetest.Node(t, p.store, "web-1", "0.1.0"+attack, time.Now())
	inc := p.incident(n, attack)
	job := p.job(n, fmt.Sprintf(`{"said":%q}`, attack))
	b := p.browser()
	b.signIn(admin)
	b.get("/ui/incidents/"+inc, http.StatusOK)
	b.post("/ui/incidents/"+inc+"/notes", url.Values{"text": {attack}}, http.StatusSeeOther)
	for _, path := range []string{"/ui/", "/ui/nodes", "/ui/nodes/" + n.ID, "/ui/jobs", "/ui/jobs/" + job.ID, "/ui/incidents", "/ui/incidents/" + inc} {
		body := b.get(path, http.StatusOK)
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s renders the attack as HTML", path)
		}
		if path != "/ui/jobs" && !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") && !strings.Contains(body, `\u003cscript`) {
			t.Errorf("%s does not show the attack as text", path)
		}
	}
}

// TestNoSecretRendered visits every page as an admin and looks for the tokens made on this plane (and
// their hashes) in every body it was given.
func TestNoSecretRendered(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	p.token(store.RoleViewer)
	n := storetest.Node(t, p.store, "web-1", "0.1.0", time.Now())
	inc := p.incident(n, "disk full")
	job := p.job(n, `{"ok":true}`)
	p.pending("new-1")
	b := p.browser()
	b.signIn(admin)
	for _, path := range []string{"/ui/", "/ui/joins", "/ui/nodes", "/ui/nodes/" + n.ID, "/ui/jobs", "/ui/jobs/" + job.ID,
		"/ui/incidents", "/ui/incidents/" + inc, "/ui/run", "/ui/run?node=" + n.ID, "/ui/tokens", "/ui/releases", "/ui/releases/diff",
		"/ui/rollouts", "/ui/drivers", "/ui/drivers/audit", "/ui/plane", "/ui/nosuch"} {
		b.do(http.MethodGet, path, nil)
	}
	if len(b.pages) < 10 {
		t.Fatalf("visited %d pages", len(b.pages))
	}
	for page, body := range b.pages {
		for _, s := range p.secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s shows a token or its hash", page)
			}
		}
	}
}
