package ui_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/ui"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
)

// TestNoSecretOnAnyPage asks every route of the UI's router, as an admin, on a fleet holding every kind
// of secret the plane has: a driver account's credential, admin tokens (and their hashes), the
// browser's session cookie (and the hash the store keys it by), a provisioning's one-time token (and
// its hash), and the master key's bytes (hex, the base64 forms, the key file's text). No response
// body holds any of them. A route added to the router without a fixture for its parameters fails the
// test, so the list cannot fall behind the router.
func TestNoSecretOnAnyPage(t *testing.T) {
	c, b, _ := newCloudPlane(t)
	ctx := context.Background()
	_, spare := c.token(store.RoleViewer) // revoked by its route
	n := storetest.Node(t, c.store, "web-1", "0.1.0", time.Now())
	inc := c.incident(n, "disk full")
	job := c.job(n, `{"ok":true}`)
	batch, err := c.store.BatchCreate(ctx, store.BatchCreateParams{Word: "w", Selector: "all", Class: "look", Params: json.RawMessage(`{}`),
		ErrorBudget: store.NoErrorBudget, Targets: []store.BatchTarget{{NodeID: n.ID}}, CreatedBy: "ui-admin"})
	must(t, err)
	join := c.pending("new-1")
	inst := c.create("web-7")
	_, err = c.mgr.AccountAdd(ctx, "ui-admin", drivers.AccountAddRequest{Driver: "cloud-mock", Name: "spare", Credential: driver.NewSecret(credential + "-spare")})
	must(t, err)
	c.secrets = append(c.secrets, credential+"-spare")

	// A provisioning that minted its one-time token.
	pr := c.provisioning("web-8")
	mach, err := c.store.MachinePut(ctx, store.MachinePutParams{Name: "backup-nas", Purpose: "backups", Owner: "ops", OSRelease: "debian 12", By: "ui-admin"})
	must(t, err)
	token := provision.TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	if _, err := c.store.ProvisioningUpdate(ctx, store.ProvisioningUpdateParams{ID: pr.ID, From: pr.State, To: pr.State, TokenHash: provision.TokenHash(token),
		TokenExpiresAt: time.Now().Add(time.Hour), By: store.AuthorPlane, Now: time.Now(), Detail: "minted a one-time join token"}); err != nil {
		t.Fatal(err)
	}
	c.secrets = append(c.secrets, token, provision.TokenHash(token))

	// A rollout, started as an admin would.
	b.get("/ui/rollouts", http.StatusOK)
	res, _ := b.do(http.MethodPost, "/ui/rollouts", withCSRF(url.Values{"release": {"1"}, "selector": {"web-1"}}, b.csrf))
	m := rolloutLoc.FindStringSubmatch(res.Header.Get("Location"))
	if m == nil {
		t.Fatalf("starting a rollout: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	rollout := m[1]

	// The master key, in every form it could leak in.
	text, err := os.ReadFile(c.keyFile)
	must(t, err)
	enc, ok := strings.CutPrefix(strings.TrimSpace(string(text)), "lexicon-master-key-v1:")
	if !ok {
		t.Fatalf("the master key file is not what this test reads: %.24q", text)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	must(t, err)
	c.secrets = append(c.secrets, strings.TrimSpace(string(text)), hex.EncodeToString(raw), strings.ToUpper(hex.EncodeToString(raw)),
		base64.StdEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw), base64.URLEncoding.EncodeToString(raw), enc)

	// The session: the cookie's value and the store's key for it.
	base := mustURL(t, c.ts.URL+ui.Prefix+"/")
	var session string
	for _, ck := range b.c.Jar.Cookies(base) {
		if ck.Name == "lexicon_session" {
			session = ck.Value
		}
	}
	if session == "" {
		t.Fatal("the browser holds no session cookie")
	}
	sum := sha256.Sum256([]byte(session))
	c.secrets = append(c.secrets, session, hex.EncodeToString(sum[:]))

	// Every route of the UI's own router, with a fixture for each parameter.
	type route struct{ method, pattern string }
	var routes []route
	must(t, chi.Walk(ui.New(ui.Config{}).Handler().(chi.Routes), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, route{method, pattern})
		return nil
	}))
	// GETs first, then the POSTs, sign-out last: a POST may change what a later page shows.
	slices.SortStableFunc(routes, func(a, b route) int {
		rank := func(r route) int {
			switch {
			case r.pattern == "/signout":
				return 2
			case r.method == http.MethodPost:
				return 1
			}
			return 0
		}
		return rank(a) - rank(b)
	})
	param := regexp.MustCompile(`\{[a-z]+\}|\*`)
	fill := func(pattern string) string {
		return param.ReplaceAllStringFunc(pattern, func(p string) string {
			prefix := pattern[:strings.Index(pattern, p)]
			switch {
			case p == "*" && strings.HasPrefix(pattern, "/static/"):
				return "ui.css"
			case p == "{seq}":
				return "1"
			case p == "{account}":
				return "lab"
			case p == "{name}" && strings.HasPrefix(pattern, "/drivers/"):
				return "cloud-mock"
			case p == "{name}" && strings.HasPrefix(pattern, "/accounts/"):
				return "spare"
			case p == "{id}" && strings.HasPrefix(pattern, "/cloud/"):
				return inst.ID
			case p == "{id}" && prefix == "/joins/":
				return join.ID
			case p == "{id}" && prefix == "/nodes/":
				return n.ID
			case p == "{id}" && prefix == "/jobs/":
				return job.ID
			case p == "{id}" && prefix == "/batches/":
				return batch.ID
			case p == "{id}" && prefix == "/rollouts/":
				return rollout
			case p == "{id}" && prefix == "/incidents/":
				return inc
			case p == "{id}" && prefix == "/provisionings/":
				return pr.ID
			case p == "{id}" && prefix == "/machines/":
				return mach.ID
			case p == "{id}" && prefix == "/schedules/":
				return "packages-report"
			case p == "{id}" && prefix == "/tokens/":
				return spare.ID
			case p == "{id}" && prefix == "/plane/replicas/":
				return "replica-nosuch"
			case p == "{id}" && prefix == "/backups/nodes/":
				return n.ID
			case p == "{name}" && prefix == "/backups/targets/":
				return "target-nosuch"
			case p == "{name}" && prefix == "/roles/":
				return "role-nosuch"
			}
			t.Fatalf("route %s: no fixture for its parameter %s; add one to this test", pattern, p)
			return ""
		})
	}
	// Pages with queries first, while the session lives.
	for _, extra := range []string{"/ui/run?node=" + n.ID, "/ui/releases/diff?from=1&to=1", "/ui/nodes?word=w", "/ui/drivers/audit?account=lab",
		"/ui/provisionings?open=true", "/ui/cloud/lab?accepted=x"} {
		if res, body := b.do(http.MethodGet, extra, nil); res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", extra, res.StatusCode, body)
		}
	}
	seen, deleteStatus := 0, 0
	for _, r := range routes {
		path := ui.Prefix + fill(r.pattern)
		var form url.Values
		if r.method == http.MethodPost {
			form = url.Values{"csrf": {b.csrf}, "confirm": {"not-its-label"}, "fingerprint": {"not-its-fingerprint"}, "note": {"looked"}}
		}
		res, body := b.do(r.method, path, form)
		if strings.HasPrefix(r.pattern, "/cloud/") && strings.HasSuffix(r.pattern, "/delete") {
			deleteStatus = res.StatusCode
		}
		if res.StatusCode >= 500 {
			t.Errorf("%s %s: %d\n%s", r.method, path, res.StatusCode, body)
		}
		// A redirect's target is a page too.
		if loc := res.Header.Get("Location"); loc != "" && strings.HasPrefix(loc, ui.Prefix) && r.pattern != "/signout" {
			b.do(http.MethodGet, loc, nil)
		}
		seen++
	}
	if seen < 50 {
		t.Fatalf("asked %d routes; the router has more", seen)
	}
	for page, body := range b.pages {
		for _, s := range c.secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s shows a secret (%.6s…)", page, s)
			}
		}
	}
	if deleteStatus != http.StatusConflict {
		t.Errorf("a delete confirmed with another label answered %d, want %d", deleteStatus, http.StatusConflict)
	}
}
