package ui_test

import (
	"bytes"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/ui"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestSessionOnEveryReplica: a session opened on one replica is accepted by another on the same store,
// signing out on either ends it on both, and the store holds no cookie that would open it.
func TestSessionOnEveryReplica(t *testing.T) {
	dir := t.TempDir()
	st, err := open.SQLite(t.Context(), filepath.Join(dir, "plane.db"))
	must(t, err)
	t.Cleanup(func() { st.Close() })
	a := newPlaneOn(t, st, wire.Config{})
	b := newPlaneOn(t, st, wire.Config{})
	admin, _ := a.token(store.RoleAdmin)

	onA := a.browser()
	onA.signIn(admin)
	cookies := onA.c.Jar.Cookies(mustURL(t, a.ts.URL+"/ui/"))
	var value string
	for _, c := range cookies {
		if c.Name == "lexicon_session" {
			value = c.Value
		}
	}
	if value == "" {
		t.Fatal("no session cookie")
	}
	onB := b.browser()
	onB.c.Jar.SetCookies(mustURL(t, b.ts.URL+"/ui/"), cookies)
	if who := onB.get("/ui/", http.StatusOK); !strings.Contains(who, "ui-admin (admin)") {
		t.Fatalf("replica B does not know A's session:\n%s", who)
	}
	for _, f := range []string{"plane.db", "plane.db-wal"} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		if bytes.Contains(data, []byte(value)) {
			t.Fatalf("%s holds the session cookie", f)
		}
	}
	onB.post("/ui/signout", nil, http.StatusSeeOther)
	if res, _ := onA.do(http.MethodGet, "/ui/", nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("replica A after signing out on B: %d", res.StatusCode)
	}
}

// TestSignInRateLimit: an address that failed SignInBurst times is refused with auth.signin_limited,
// even with a good token, until its allowance refills; a success costs nothing.
func TestSignInRateLimit(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p := newPlaneWith(t, wire.Config{Now: clock})
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	for range 3 { // successes do not count
		b.signIn(admin)
	}
	for i := range ui.SignInBurst {
		b.get("/ui/signin", http.StatusOK)
		if body := b.post("/ui/signin", url.Values{"token": {"lxt_wrong"}}, http.StatusUnauthorized); !strings.Contains(body, "unknown or revoked") {
			t.Fatalf("failure %d: %s", i, body)
		}
	}
	for _, tok := range []string{"lxt_wrong", admin} {
		b.get("/ui/signin", http.StatusOK)
		res, body := b.do(http.MethodPost, "/ui/signin", url.Values{"token": {tok}, "csrf": {b.csrf}})
		if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, errcode.AuthSignInLimited) || res.Header.Get("Retry-After") == "" {
			t.Fatalf("sign-in over the limit: %d %q\n%s", res.StatusCode, res.Header.Get("Retry-After"), body)
		}
	}
	mu.Lock()
	now = now.Add(ui.SignInRefill)
	mu.Unlock()
	b.signIn(admin)
}

// TestSignInRateLimitConcurrent: failures sent at once spend the bucket exactly: SignInBurst of them
// are looked at and refused as unknown, every other one is limited.
func TestSignInRateLimitConcurrent(t *testing.T) {
	p := newPlaneWith(t, wire.Config{Now: func() time.Time { return time.Unix(1_900_000_000, 0) }})
	const tries = 3 * ui.SignInBurst
	browsers := make([]*browser, tries)
	for i := range browsers {
		browsers[i] = p.browser()
		browsers[i].get("/ui/signin", http.StatusOK)
	}
	statuses := make([]int, tries)
	var wg sync.WaitGroup
	for i, b := range browsers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, p.ts.URL+"/ui/signin", strings.NewReader(url.Values{"token": {"lxt_wrong"}, "csrf": {b.csrf}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err := b.c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			statuses[i] = res.StatusCode
		}()
	}
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	if count[http.StatusUnauthorized] != ui.SignInBurst || count[http.StatusTooManyRequests] != tries-ui.SignInBurst {
		t.Fatalf("concurrent failures: %v", count)
	}
}

// trySignIn posts the sign-in form with token, from behind a proxy that wrote xff into
// X-Forwarded-For ("" sends none), and returns the answer's status and body.
func (b *browser) trySignIn(token, xff string) (int, string) {
	b.p.t.Helper()
	b.get("/ui/signin", http.StatusOK)
	req, err := http.NewRequest(http.MethodPost, b.p.ts.URL+"/ui/signin", strings.NewReader(url.Values{"token": {token}, "csrf": {b.csrf}}.Encode()))
	if err != nil {
		b.p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.p.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// failUntilLimited spends the allowance of the client behind xff: SignInBurst failures answered as
// unknown, then auth.signin_limited.
func (b *browser) failUntilLimited(xff string) {
	b.p.t.Helper()
	for i := range ui.SignInBurst {
		if status, body := b.trySignIn("lxt_wrong", xff); status != http.StatusUnauthorized {
			b.p.t.Fatalf("failure %d from %q: %d\n%s", i, xff, status, body)
		}
	}
	if status, body := b.trySignIn("lxt_wrong", xff); status != http.StatusTooManyRequests || !strings.Contains(body, errcode.AuthSignInLimited) {
		b.p.t.Fatalf("failure over the limit from %q: %d\n%s", xff, status, body)
	}
}

// TestSignInLimitPerClientBehindTrustedProxy: through a trusted proxy (the test's connections come from
// loopback), each client the proxy names is counted on its own, so one client's failures do not lock
// out another; the right-most untrusted address is the client, whatever the client wrote to its left,
// and trusted hops to its right are passed over.
func TestSignInLimitPerClientBehindTrustedProxy(t *testing.T) {
	p := newPlaneWith(t, wire.Config{Now: func() time.Time { return time.Unix(1_900_000_000, 0) },
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	b.failUntilLimited("198.51.100.1")
	for _, xff := range []string{
		"203.0.113.7, 198.51.100.1",   // a forged left part is not a new client
		"198.51.100.1, 127.0.0.9",     // a second trusted proxy in the chain
		"10.9.9.9,198.51.100.1:50123", // a port after the address
	} {
		if status, body := b.trySignIn(admin, xff); status != http.StatusTooManyRequests {
			t.Fatalf("the limited client as %q: %d\n%s", xff, status, body)
		}
	}
	if status, body := b.trySignIn("lxt_wrong", "198.51.100.2"); status != http.StatusUnauthorized {
		t.Fatalf("another client behind the same proxy: %d, want 401 (its own count)\n%s", status, body)
	}
	if status, body := b.trySignIn(admin, "198.51.100.3"); status != http.StatusSeeOther {
		t.Fatalf("a third client signing in: %d\n%s", status, body)
	}
}

// TestSignInIgnoresUntrustedForwardedFor: from a peer that is not a trusted proxy, X-Forwarded-For is
// ignored: changing it does not make a limited address a new client.
func TestSignInIgnoresUntrustedForwardedFor(t *testing.T) {
	for name, trusted := range map[string][]netip.Prefix{"none": nil, "elsewhere": {netip.MustParsePrefix("192.0.2.0/24")}} {
		t.Run(name, func(t *testing.T) {
			p := newPlaneWith(t, wire.Config{Now: func() time.Time { return time.Unix(1_900_000_000, 0) }, TrustedProxies: trusted})
			admin, _ := p.token(store.RoleAdmin)
			b := p.browser()
			b.failUntilLimited("198.51.100.1")
			for _, xff := range []string{"", "198.51.100.2", "192.0.2.1", "198.51.100.2, 192.0.2.1"} {
				if status, body := b.trySignIn(admin, xff); status != http.StatusTooManyRequests {
					t.Fatalf("X-Forwarded-For %q from an untrusted peer: %d\n%s", xff, status, body)
				}
			}
		})
	}
}

// TestSignInBodyLimit: a sign-in over SignInMaxBody is refused with request.too_large (413) before its
// token is looked at or counted; one just under is read.
func TestSignInBodyLimit(t *testing.T) {
	p := newPlane(t)
	b := p.browser()
	status, body := b.trySignIn("lxt_"+strings.Repeat("a", ui.SignInMaxBody), "")
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, errcode.RequestTooLarge) {
		t.Fatalf("an oversized sign-in: %d\n%s", status, body)
	}
	if status, body := b.trySignIn("lxt_"+strings.Repeat("a", ui.SignInMaxBody-200), ""); status != http.StatusUnauthorized {
		t.Fatalf("a sign-in under the cap: %d\n%s", status, body)
	}
}
