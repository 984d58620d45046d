package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// lighthouseScript is the Lighthouse runner `make lighthouse` installs from tools/lighthouse.
var lighthouseScript = filepath.Join(root, "build", "lighthouse", "audit.mjs")

// The floors the UI's main pages are held to, at a phone's width (Lighthouse's default form factor).
const (
	minAccessibility = 0.98
	minBestPractices = 1.0
)

// lighthouseReport is one page's line from audit.mjs.
type lighthouseReport struct {
	URL    string             `json:"url"`
	Scores map[string]float64 `json:"scores"`
	Misses []struct {
		Category, ID, Title string
		Score               float64
		Items               []string
	} `json:"misses"`
}

// lighthouse runs npm's Lighthouse (tools/lighthouse) with the machine's Chromium on pages of the UI,
// signed in with its own session as token, prints every page's scores and asserts the floors. Without
// the runner it is skipped, except under CI=true, where `make test` installed it.
func lighthouse(t *testing.T, f *fleet, token string, pages ...string) {
	t.Helper()
	if _, err := os.Stat(lighthouseScript); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("lighthouse missing in CI (%v): make lighthouse installs it", err)
		}
		t.Logf("lighthouse not installed (make lighthouse): %v; not measured", err)
		return
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is required in CI (.ci/run installs nodejs)")
		}
		t.Logf("no node on this machine; lighthouse not measured")
		return
	}
	cookie := signInCookie(t, f, token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, node, append([]string{lighthouseScript, "--chrome", chromiumPath(t), "--cookie", cookie}, pages...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lighthouse: %v\n%s\n%s", err, out, stderr.String())
	}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r lighthouseReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("lighthouse printed %q: %v", sc.Text(), err)
		}
		seen++
		path := r.URL
		if u, err := url.Parse(r.URL); err == nil {
			path = u.Path
		}
		t.Logf("lighthouse %-40s accessibility %3.0f  best practices %3.0f", path, 100*r.Scores["accessibility"], 100*r.Scores["best-practices"])
		for _, m := range r.Misses {
			t.Logf("  %s: %s (%s, score %.2f) %s", m.Category, m.ID, m.Title, m.Score, strings.Join(m.Items, "; "))
		}
		if strings.Contains(path, "/signin") && !strings.Contains(pages[seen-1], "/signin") {
			t.Errorf("lighthouse measured the sign-in page for %s: the session was not taken", pages[seen-1])
		}
		if a := r.Scores["accessibility"]; a < minAccessibility {
			t.Errorf("%s: accessibility %.0f, want at least %.0f", path, 100*a, 100*minAccessibility)
		}
		if b := r.Scores["best-practices"]; b < minBestPractices {
			t.Errorf("%s: best practices %.0f, want %.0f", path, 100*b, 100*minBestPractices)
		}
	}
	if seen != len(pages) {
		t.Fatalf("lighthouse reported %d pages of %d\n%s", seen, len(pages), stderr.String())
	}
	t.Logf("lighthouse: %d pages in %s", seen, time.Since(start).Round(time.Second))
}

var signinCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signInCookie signs in to the UI with token as a browser does and returns the session cookie as a
// Cookie header's value, for a browser that is not the test's own.
func signInCookie(t *testing.T, f *fleet, token string) string {
	t.Helper()
	c := planeClient(t, f.ca)
	jar, _ := cookiejar.New(nil)
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Get(f.url + "/ui/signin")
	must(t, err)
	var page bytes.Buffer
	_, err = page.ReadFrom(res.Body)
	res.Body.Close()
	must(t, err)
	m := signinCSRF.FindStringSubmatch(page.String())
	if m == nil {
		t.Fatalf("the sign-in page has no CSRF token:\n%s", page.String())
	}
	res, err = c.PostForm(f.url+"/ui/signin", url.Values{"csrf": {m[1]}, "token": {strings.TrimSpace(token)}})
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing in for lighthouse: %d", res.StatusCode)
	}
	u, err := url.Parse(f.url + "/ui/")
	must(t, err)
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "lexicon_session" {
			return ck.Name + "=" + ck.Value
		}
	}
	t.Fatal("signing in for lighthouse gave no session cookie")
	return ""
}
