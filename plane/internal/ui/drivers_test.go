package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

const credential = "cf-token-UI7qZ2mX9vB4nK8pL3rT6yU1"

// driverRelease builds examples/driver-memory and packs a release pinning it as dns-memory.
func driverRelease(t *testing.T, key keys.PublisherPrivate) []byte {
	return oneDriverRelease(t, key, "./examples/driver-memory", "dns", "memory", "zones in memory")
}

// oneDriverRelease builds the driver in pkg (a path from the repository's root) and packs a release
// pinning it alone, as <class>-<name>, for this machine's platform.
func oneDriverRelease(t *testing.T, key keys.PublisherPrivate, pkg, class, name, summary string) []byte {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	mods := filepath.Join(t.TempDir(), "modules")
	d := filepath.Join(mods, name)
	must(t, os.MkdirAll(d, 0o755))
	bin := "lexicon-driver-" + class + "-" + name
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(d, bin), pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the %s driver: %v\n%s", name, err, out)
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	mf := fmt.Sprintf(`{"schema":"lexicon/manifest/v1","name":%q,"kind":"driver","version":"1.0.0","class":%q,"summary":%q,"platforms":[%q],"module":{"file":%q}}`,
		name, class, summary, platform, bin)
	must(t, os.WriteFile(filepath.Join(d, "manifest.json"), []byte(mf), 0o644))
	out := filepath.Join(t.TempDir(), "release")
	if _, err := registry.Build(registry.BuildOptions{Key: key, ModulesDir: mods, Release: "1.0.0", Sequence: 1, OutDir: out}); err != nil {
		t.Fatal(err)
	}
	return packRelease(t, out)
}

// TestDriversAndAccounts enables a driver on the page, adds an account from the form its config
// schema makes (a value the schema refuses is marked by its field; the credential is never rendered
// back), reads the audit log, removes the account, and holds a viewer to reading.
func TestDriversAndAccounts(t *testing.T) {
	dir := t.TempDir()
	st, err := open.SQLite(t.Context(), filepath.Join(dir, "plane.db"))
	must(t, err)
	t.Cleanup(func() { st.Close() })
	key, err := seal.LoadOrCreate(filepath.Join(dir, "master.key"))
	must(t, err)
	mgr, err := drivers.New(drivers.Config{Store: st, Dir: filepath.Join(dir, "drivers"), Key: key, Plugin: goplugin.Options{MinBackoff: 20 * time.Millisecond}})
	must(t, err)
	t.Cleanup(mgr.Close)
	pub := keys.NewPublisher()
	trust := filepath.Join(dir, "trust")
	must(t, registry.InitTrust(trust, []keys.PublisherPublic{pub.Public()}, nil))
	p := newPlaneOn(t, st, wire.Config{TrustDir: trust, Drivers: mgr})
	p.secrets = append(p.secrets, credential)
	admin, _ := p.token(store.RoleAdmin)
	viewer, _ := p.token(store.RoleViewer)

	b := p.browser()
	b.signIn(admin)
	b.get("/ui/releases", http.StatusOK)
	b.upload(driverRelease(t, pub), b.csrf, http.StatusCreated)
	list := b.get("/ui/drivers", http.StatusOK)
	if !strings.Contains(list, `action="/ui/drivers/dns-memory/enable"`) || strings.Contains(list, "add-account") {
		t.Fatalf("a pinned, disabled driver:\n%s", list)
	}
	b.post("/ui/drivers/dns-memory/enable", nil, http.StatusSeeOther)
	list = b.get("/ui/drivers", http.StatusOK)
	if !strings.Contains(list, `href="/ui/drivers/dns-memory/accounts/new"`) || !strings.Contains(list, `action="/ui/drivers/dns-memory/disable"`) {
		t.Fatalf("an enabled driver:\n%s", list)
	}

	form := b.get("/ui/drivers/dns-memory/accounts/new", http.StatusOK)
	for _, want := range []string{`name="/zones"`, `name="credential"`, `type="password"`, `action="/ui/accounts"`} {
		if !strings.Contains(form, want) {
			t.Fatalf("the account form lacks %s:\n%s", want, form)
		}
	}
	// The schema wants at least one zone: the plane refuses none, next to the field, and the page
	// sent back holds what was typed except the credential.
	refused := b.post("/ui/accounts", url.Values{"driver": {"dns-memory"}, "name": {"lab"}, "/zones": {""}, "credential": {credential}}, http.StatusBadRequest)
	if !regexp.MustCompile(`(?s)data-path="/zones".*field-error">[^<]*`+errcode.DriverConfigInvalid).MatchString(refused) || !strings.Contains(refused, `value="lab"`) {
		t.Fatalf("a refused account:\n%s", refused)
	}
	b.post("/ui/accounts", url.Values{"driver": {"dns-memory"}, "name": {"lab"}, "/zones": {"example.com\nexample.org"}, "credential": {credential}}, http.StatusSeeOther)
	list = b.get("/ui/drivers", http.StatusOK)
	if !strings.Contains(list, `id="account-lab"`) || !strings.Contains(list, "example.org") {
		t.Fatalf("the account added:\n%s", list)
	}
	// What was typed into the settings, and the driver's refusal quoting it, are shown as text.
	evil := b.post("/ui/accounts", url.Values{"driver": {"dns-memory"}, "name": {"evil"}, "/zones": {attack}, "credential": {credential}}, http.StatusBadRequest)
	if strings.Contains(evil, "<script>alert") || strings.Contains(evil, "<img src=x") || !strings.Contains(evil, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("a refused account holding HTML:\n%s", evil)
	}
	dup := b.post("/ui/accounts", url.Values{"driver": {"dns-memory"}, "name": {"lab"}, "/zones": {"example.com"}, "credential": {credential}}, http.StatusConflict)
	if !strings.Contains(dup, errcode.AccountExists) {
		t.Fatalf("the same account again:\n%s", dup)
	}
	audit := b.get("/ui/drivers/audit", http.StatusOK)
	for _, op := range []string{"driver.enable", "driver.config_schema", "account.add"} {
		if !strings.Contains(audit, op) {
			t.Fatalf("the audit log lacks %s:\n%s", op, audit)
		}
	}
	b.get("/ui/drivers/audit?driver=dns-memory&account=lab", http.StatusOK)

	// A viewer reads, and changes nothing.
	v := p.browser()
	v.signIn(viewer)
	for _, path := range []string{"/ui/drivers", "/ui/drivers/audit"} {
		body := v.get(path, http.StatusOK)
		for _, m := range postForm.FindAllStringSubmatch(body, -1) {
			if m[1] != "/ui/signout" {
				t.Errorf("%s offers a viewer the form %s", path, m[1])
			}
		}
	}
	v.get("/ui/drivers/dns-memory/accounts/new", http.StatusForbidden)
	for path, form := range map[string]url.Values{
		"/ui/accounts":                   {"driver": {"dns-memory"}, "name": {"mine"}, "/zones": {"x.org"}, "credential": {credential}},
		"/ui/accounts/lab/remove":        {},
		"/ui/drivers/dns-memory/disable": {},
	} {
		if body := v.post(path, form, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
			t.Errorf("a viewer's POST %s: %s", path, body)
		}
	}

	b.get("/ui/drivers", http.StatusOK)
	b.post("/ui/accounts/lab/remove", nil, http.StatusSeeOther)
	if list := b.get("/ui/drivers", http.StatusOK); strings.Contains(list, `id="account-lab"`) {
		t.Fatal("the removed account is listed")
	}
	b.post("/ui/drivers/dns-memory/disable", nil, http.StatusSeeOther)
	for page, body := range b.pages {
		for _, s := range p.secrets {
			if strings.Contains(body, s) {
				t.Errorf("%s shows a secret", page)
			}
		}
	}
	for page, body := range v.pages {
		if strings.Contains(body, credential) {
			t.Errorf("%s shows the credential", page)
		}
	}
}

// TestDriversWithoutDrivers: a plane that runs without drivers says so on the page.
func TestDriversWithoutDrivers(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	b.signIn(admin)
	if body := b.get("/ui/drivers", http.StatusOK); !strings.Contains(body, `id="drivers-unavailable"`) || !strings.Contains(body, errcode.DriverUnavailable) {
		t.Fatalf("drivers page without drivers:\n%s", body)
	}
}
