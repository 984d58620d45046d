package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}()

// driverBins are the driver executables the tests build on first use: the outside author's in-memory
// DNS driver, host/goplugin's misbehaving one, and its mock cloud driver (creating "hang" never
// answers), also built as "basic", a cloud driver without the optional features.
var (
	driverBins = map[string]string{}
	binDir     string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plane-server-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	reportDocumentCoverage()
	os.RemoveAll(dir)
	os.Exit(code)
}

var buildDrivers = sync.OnceValue(func() error {
	for name, pkg := range map[string]string{"memory": "./examples/driver-memory", "crashy": "./host/goplugin/internal/testdriver/dns",
		"mock": "./host/goplugin/internal/testdriver/cloud", "basic": "./host/goplugin/internal/testdriver/cloud"} {
		out := filepath.Join(binDir, "lexicon-driver-"+driverClass(name)+"-"+name)
		flags := "-s -w"
		if name == "basic" {
			flags += " -X main.variant=basic"
		}
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags="+flags, "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", pkg, err, msg)
		}
		driverBins[name] = out
	}
	return nil
})

// driverClass is the class of a test driver: the cloud mocks, or DNS.
func driverClass(name string) string {
	if name == "mock" || name == "basic" {
		return "cloud"
	}
	return "dns"
}

const credential = "cf-token-8QzW3nX5vB7mK2pL9rT4yU6iO1aS0dFg"

// plane is an in-process plane with drivers, and one token per role. Every answer it gives is kept, to
// be searched for the credential.
type driverPlane struct {
	t       *testing.T
	url     string
	log     *testkit.Buffer
	tokens  map[store.Role]string
	mu      sync.Mutex
	answers bytes.Buffer
	pub     keys.PublisherPrivate
	seq     uint64
}

func newDriverPlane(t *testing.T) *driverPlane {
	t.Helper()
	return newDriverPlaneWith(t, goplugin.Options{MinBackoff: 20 * time.Millisecond})
}

// newDriverPlaneWith is newDriverPlane with the driver processes' options.
func newDriverPlaneWith(t *testing.T, plugin goplugin.Options) *driverPlane {
	t.Helper()
	if err := buildDrivers(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st := storetest.Open(t, filepath.Join(dir, "plane.db"))
	pub := keys.NewPublisher()
	trust := filepath.Join(dir, "trust")
	if err := registry.InitTrust(trust, []keys.PublisherPublic{pub.Public()}, nil); err != nil {
		t.Fatal(err)
	}
	key, err := seal.LoadOrCreate(filepath.Join(dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	lb := &testkit.Buffer{}
	log := slog.New(slog.NewJSONHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mgr, err := drivers.New(drivers.Config{Store: st, Dir: filepath.Join(dir, "drivers"), Key: key, Log: log,
		Plugin: plugin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mgr.Close)
	srv := wire.New(wire.Config{Store: st, TrustDir: trust, Log: log, Drivers: mgr})
	hs := httptest.NewServer(checked(t, srv.Handler()))
	t.Cleanup(hs.Close)
	p := &driverPlane{t: t, url: hs.URL, log: lb, tokens: map[store.Role]string{}, pub: pub}
	for _, role := range []store.Role{store.RoleViewer, store.RoleOperator, store.RoleAdmin} {
		tok, hash := tokens.Mint()
		if _, err := st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "tok-" + string(role), Role: role, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		p.tokens[role] = tok
	}
	t.Cleanup(func() {
		if strings.Contains(p.log.String(), credential) {
			t.Errorf("the plane's log holds the credential:\n%s", p.log.String())
		} else if t.Failed() {
			t.Logf("the plane's log:\n%s", p.log.String())
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if strings.Contains(p.answers.String(), credential) {
			t.Errorf("an answer holds the credential:\n%s", p.answers.String())
		}
		trail, err := st.AuditEventList(context.Background(), store.AuditEventListParams{Limit: store.MaxListLimit})
		if b, _ := json.Marshal(trail); err != nil || strings.Contains(string(b), credential) {
			t.Errorf("the audit trail (%v) holds the credential:\n%s", err, b)
		}
	})
	return p
}

// call sends a request as role and returns the status and the decoded answer.
func (p *driverPlane) call(role store.Role, method, path string, body any) (int, map[string]any) {
	p.t.Helper()
	var r io.Reader
	ct := "application/json"
	switch b := body.(type) {
	case nil:
	case []byte:
		r, ct = bytes.NewReader(b), "application/x-tar"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			p.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(p.t.Context(), method, p.url+"/api/v1/admin"+path, r)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.tokens[role])
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	p.mu.Lock()
	p.answers.Write(data)
	p.mu.Unlock()
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		p.t.Fatalf("%s %s: answer is not a JSON object: %s", method, path, data)
	}
	return resp.StatusCode, out
}

// want fails the test unless the call answered status (and, for errors, code).
func (p *driverPlane) want(status int, code string, role store.Role, method, path string, body any) map[string]any {
	p.t.Helper()
	got, out := p.call(role, method, path, body)
	if got != status {
		p.t.Fatalf("%s %s as %s: status %d, want %d: %v", method, path, role, got, status, out)
	}
	if code != "" {
		e, _ := out["error"].(map[string]any)
		if e == nil || e["code"] != code {
			p.t.Fatalf("%s %s as %s: %v, want code %s", method, path, role, out, code)
		}
	}
	return out
}

// publish signs a release of the named test drivers and publishes it through the admin API, as
// `lexicon releases publish` does.
func (p *driverPlane) publish(names ...string) {
	p.t.Helper()
	mods := filepath.Join(p.t.TempDir(), "modules")
	for _, n := range names {
		d := filepath.Join(mods, n)
		if err := os.MkdirAll(d, 0o755); err != nil {
			p.t.Fatal(err)
		}
		class := driverClass(n)
		mf := fmt.Sprintf(`{"schema":"lexicon/manifest/v1","name":%q,"kind":"driver","version":"1.0.0","class":%q,"summary":"test","platforms":["linux/amd64"],"module":{"file":"lexicon-driver-%s-%s"}}`, n, class, class, n)
		data, err := os.ReadFile(driverBins[n])
		if err != nil {
			p.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "manifest.json"), []byte(mf), 0o644); err != nil {
			p.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "lexicon-driver-"+class+"-"+n), data, 0o755); err != nil {
			p.t.Fatal(err)
		}
	}
	p.seq++
	out := filepath.Join(p.t.TempDir(), "release")
	if _, err := registry.Build(registry.BuildOptions{Key: p.pub, ModulesDir: mods, Release: "1.0.0", Sequence: p.seq, OutDir: out}); err != nil {
		p.t.Fatal(err)
	}
	p.want(http.StatusCreated, "", store.RoleAdmin, http.MethodPost, "/releases", tarRelease(p.t, out))
}

func prefix(list []string) []string {
	out := make([]string, len(list))
	for i, d := range list {
		out[i] = "sha256/" + d
	}
	return out
}

func TestDriverRoutes(t *testing.T) {
	p := newDriverPlane(t)
	const (
		viewer   = store.RoleViewer
		operator = store.RoleOperator
		admin    = store.RoleAdmin
	)
	get, post := http.MethodGet, http.MethodPost

	p.want(http.StatusConflict, "driver.not_pinned", admin, post, "/drivers/dns-memory/enable", nil)
	p.publish("memory", "crashy")
	list := p.want(http.StatusOK, "", viewer, get, "/drivers", nil)
	if ds := list["drivers"].([]any); len(ds) != 2 || ds[1].(map[string]any)["name"] != "dns-memory" {
		t.Fatalf("list %v", list)
	}

	// Roles: enabling and accounts are an admin's; provider calls an operator's; reading a viewer's.
	p.want(http.StatusForbidden, "auth.forbidden", operator, post, "/drivers/dns-memory/enable", nil)
	p.want(http.StatusConflict, "driver.not_pinned", admin, post, "/drivers/dns-nosuch/enable", nil)
	p.want(http.StatusBadRequest, "request.malformed", admin, post, "/drivers/DNS%20memory/enable", nil)
	on := p.want(http.StatusOK, "", admin, post, "/drivers/dns-memory/enable", nil)
	if on["enabled"] != true || on["changed_by"] != "tok-admin" {
		t.Fatalf("enable %v", on)
	}
	p.want(http.StatusOK, "", admin, post, "/drivers/dns-crashy/enable", nil)

	// The settings schema an account form is made from: the driver's own, asked once per executable.
	p.want(http.StatusForbidden, "auth.forbidden", operator, get, "/drivers/dns-memory/schema", nil)
	p.want(http.StatusConflict, "driver.disabled", admin, get, "/drivers/dns-nosuch/schema", nil)
	for range 2 {
		sch := p.want(http.StatusOK, "", admin, get, "/drivers/dns-memory/schema", nil)
		props, _ := sch["schema"].(map[string]any)["properties"].(map[string]any)
		if sch["name"] != "dns-memory" || sch["kind"] != "dns" || props["zones"] == nil {
			t.Fatalf("schema %v", sch)
		}
	}
	if audit := p.want(http.StatusOK, "", viewer, get, "/drivers/audit?driver=dns-memory", nil); strings.Count(fmt.Sprint(audit), "driver.config_schema") != 1 {
		t.Fatalf("the schema is asked of the driver once, and audited: %v", audit)
	}

	account := map[string]any{"driver": "dns-memory", "name": "lab", "settings": map[string]any{"zones": []string{"example.com"}}, "credential": credential}
	p.want(http.StatusForbidden, "auth.forbidden", operator, post, "/accounts", account)
	p.want(http.StatusBadRequest, "request.malformed", admin, post, "/accounts", map[string]any{"driver": "dns-memory", "name": "x", "credential": credential, "password": credential})
	p.want(http.StatusBadRequest, "driver.config_invalid", admin, post, "/accounts",
		map[string]any{"driver": "dns-memory", "name": "lab", "settings": map[string]any{"zones": "example.com"}, "credential": credential})
	p.want(http.StatusRequestEntityTooLarge, "request.too_large", admin, post, "/accounts",
		map[string]any{"driver": "dns-memory", "name": "big", "credential": strings.Repeat("x", 200<<10)})
	added := p.want(http.StatusCreated, "", admin, post, "/accounts", account)
	if added["name"] != "lab" || added["driver"] != "dns-memory" || added["created_by"] != "tok-admin" {
		t.Fatalf("added %v", added)
	}
	p.want(http.StatusConflict, "account.exists", admin, post, "/accounts", account)
	p.want(http.StatusCreated, "", admin, post, "/accounts",
		map[string]any{"driver": "dns-crashy", "name": "flaky", "settings": map[string]any{"zones": []string{"crash.test"}}, "credential": credential})
	accts := p.want(http.StatusOK, "", viewer, get, "/accounts", nil)
	if len(accts["accounts"].([]any)) != 2 {
		t.Fatalf("accounts %v", accts)
	}

	p.want(http.StatusForbidden, "auth.forbidden", viewer, get, "/dns/lab/zones", nil)
	zones := p.want(http.StatusOK, "", operator, get, "/dns/lab/zones", nil)
	if z := zones["zones"].([]any); len(z) != 1 || z[0].(map[string]any)["name"] != "example.com." {
		t.Fatalf("zones %v", zones)
	}
	p.want(http.StatusNotFound, "account.not_found", operator, get, "/dns/nobody/zones", nil)
	p.want(http.StatusNotFound, "dns.not_found", operator, get, "/dns/lab/zones/example.org/records", nil)
	p.want(http.StatusBadRequest, "account.wrong_kind", operator, get, "/cloud/lab/regions", nil)

	records := map[string]any{"records": []map[string]any{{"type": "A", "name": "www", "value": "192.0.2.1", "ttl": 300}}}
	rep := p.want(http.StatusOK, "", operator, post, "/dns/lab/zones/example.com/reconcile", records)
	if c := rep["created"].([]any); len(c) != 1 || c[0].(map[string]any)["ttl"] != float64(300) || rep["zone"] != "example.com." {
		t.Fatalf("reconcile %v", rep)
	}
	p.want(http.StatusBadRequest, "dns.invalid", operator, post, "/dns/lab/zones/example.com/reconcile",
		map[string]any{"records": []map[string]any{{"type": "A", "name": "www", "value": "192.0.2.1", "ttl": -5}}})
	p.want(http.StatusBadRequest, "request.malformed", operator, post, "/dns/lab/zones/example.com/reconcile", map[string]any{"records": "www"})

	// A crash mid-call is a driver.crashed answer (502), and the next call succeeds after the restart.
	p.want(http.StatusBadGateway, "driver.crashed", operator, get, "/dns/flaky/zones/crash.test/records", nil)
	p.want(http.StatusOK, "", operator, get, "/dns/flaky/zones", nil)
	// A bare gRPC status holding the credential is a driver.internal answer; the cleanup greps the
	// plane's log and every answer for the credential.
	p.want(http.StatusBadGateway, "driver.internal", operator, get, "/dns/flaky/zones/status.test/records", nil)
	status := p.want(http.StatusOK, "", viewer, get, "/drivers/status", nil)
	var crashy map[string]any
	for _, d := range status["drivers"].([]any) {
		if d.(map[string]any)["name"] == "dns-crashy" {
			crashy = d.(map[string]any)
		}
	}
	if a := crashy["accounts"].([]any); len(a) != 1 || a[0].(map[string]any)["restarts"] != float64(1) {
		t.Fatalf("status after the crash: %v", crashy)
	}
	// The status says what confines the driver: here at least no_new_privs, with a user or Landlock.
	if prot := fmt.Sprint(crashy["protections"]); !strings.Contains(prot, "no_new_privs") {
		t.Fatalf("status does not say how the driver is confined: %v", crashy)
	}

	// Disabled: refused at once, 409.
	p.want(http.StatusForbidden, "auth.forbidden", operator, post, "/drivers/dns-memory/disable", nil)
	p.want(http.StatusOK, "", admin, post, "/drivers/dns-memory/disable", nil)
	p.want(http.StatusConflict, "driver.disabled", operator, get, "/dns/lab/zones", nil)

	// The audit log names who asked, for which account, and how it ended.
	audit := p.want(http.StatusOK, "", viewer, get, "/drivers/audit?account=lab", nil)
	calls := audit["calls"].([]any)
	last := calls[0].(map[string]any)
	if last["actor"] != "tok-operator" || last["operation"] != "dns.list_zones" || last["code"] != "driver.disabled" || last["driver"] != "dns-memory" {
		t.Fatalf("audit %v", calls)
	}
	var crashed bool
	for _, c := range p.want(http.StatusOK, "", viewer, get, "/drivers/audit?driver=dns-crashy", nil)["calls"].([]any) {
		crashed = crashed || c.(map[string]any)["code"] == "driver.crashed"
	}
	if !crashed {
		t.Fatal("the crash is not in the audit log")
	}

	p.want(http.StatusForbidden, "auth.forbidden", operator, post, "/accounts/lab/remove", nil)
	p.want(http.StatusOK, "", admin, post, "/accounts/lab/remove", nil)
	p.want(http.StatusNotFound, "account.not_found", admin, post, "/accounts/lab/remove", nil)
}

func TestDriverRoutesWithoutDrivers(t *testing.T) {
	st := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	hs := httptest.NewServer(checked(t, wire.New(wire.Config{Store: st}).Handler()))
	defer hs.Close()
	tok, hash := tokens.Mint()
	if _, err := st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "a", Role: store.RoleAdmin, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/api/v1/admin/drivers", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "driver.unavailable") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
