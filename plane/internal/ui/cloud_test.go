package ui_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// cloudRelease builds the plane tests' mock cloud driver (host/goplugin's, over go-plugin) and packs a
// release pinning it as cloud-mock.
func cloudRelease(t *testing.T, key keys.PublisherPrivate) []byte {
	return oneDriverRelease(t, key, "./host/goplugin/internal/testdriver/cloud", "cloud", "mock", "mock cloud")
}

// cloudPlane is a plane with the mock cloud driver enabled, an account "lab" on it, and provisioning
// through the drivers as the plane wires it.
type cloudPlane struct {
	*plane
	mgr *drivers.Manager
	// keyFile is the master key's file, for the test that no page shows the key.
	keyFile string
}

func newCloudPlane(t *testing.T) (*cloudPlane, *browser, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := open.SQLite(t.Context(), filepath.Join(dir, "plane.db"))
	must(t, err)
	t.Cleanup(func() { st.Close() })
	keyFile := filepath.Join(dir, "keys", "master.key")
	key, err := seal.LoadOrCreate(keyFile)
	must(t, err)
	mgr, err := drivers.New(drivers.Config{Store: st, Dir: filepath.Join(dir, "drivers"), Key: key, Plugin: goplugin.Options{MinBackoff: 20 * time.Millisecond}})
	must(t, err)
	t.Cleanup(mgr.Close)
	pub := keys.NewPublisher()
	trust := filepath.Join(dir, "trust")
	must(t, registry.InitTrust(trust, []keys.PublisherPublic{pub.Public()}, nil))
	eng := &provision.Engine{Store: st, Cloud: drivers.ProvisionCloud{M: mgr}, DNS: drivers.ProvisionDNS{M: mgr}, EngineBase: services.EngineBase{Holder: "ui-test"}}
	p := newPlaneOn(t, st, wire.Config{TrustDir: trust, Drivers: mgr, Provision: eng})
	p.secrets = append(p.secrets, credential)
	admin, _ := p.token(store.RoleAdmin)
	b := p.browser()
	b.signIn(admin)
	b.get("/ui/releases", http.StatusOK)
	b.upload(cloudRelease(t, pub), b.csrf, http.StatusCreated)
	b.get("/ui/drivers", http.StatusOK)
	b.post("/ui/drivers/cloud-mock/enable", nil, http.StatusSeeOther)
	_, err = mgr.AccountAdd(t.Context(), "ui-admin", drivers.AccountAddRequest{Driver: "cloud-mock", Name: "lab", Settings: []byte(`{"account_name":"lab-owner"}`),
		Credential: driver.NewSecret(credential)})
	must(t, err)
	return &cloudPlane{plane: p, mgr: mgr, keyFile: keyFile}, b, admin
}

func (c *cloudPlane) create(label string) cloud.Instance {
	c.t.Helper()
	in, err := c.mgr.CloudCreate(c.t.Context(), "ui-admin", "lab", cloud.CreateRequest{Region: "test-1", Type: "small", Image: "debian-12",
		Label: label, UserData: "#cloud-config\nruncmd: [true]\n"})
	must(c.t, err)
	return in
}

// TestCloudInstancesPage lists an account's instances with the lifecycle moves the API offers, to the
// roles it offers them to: power and reboot for operators, delete for admins with the label typed
// back (a wrong label deletes nothing), nothing for viewers, whose crafted POSTs are refused.
func TestCloudInstancesPage(t *testing.T) {
	c, b, _ := newCloudPlane(t)
	operator, _ := c.token(store.RoleOperator)
	viewer, _ := c.token(store.RoleViewer)
	web1 := c.create("web-1")
	web2 := c.create("web-2")

	if list := b.get("/ui/drivers", http.StatusOK); !strings.Contains(list, `href="/ui/cloud/lab"`) {
		t.Fatalf("the drivers page links no instances of a cloud account:\n%s", list)
	}
	page := b.get("/ui/cloud/lab", http.StatusOK)
	// A running instance is offered power off, reboot and delete, never power on.
	offers := func(page string, in cloud.Instance, moves map[string]bool) {
		t.Helper()
		for move, want := range moves {
			if got := strings.Contains(page, `action="/ui/cloud/lab/instances/`+in.ID+`/`+move+`"`); got != want {
				t.Fatalf("%s offered %s: %v, want %v:\n%s", in.Label, move, got, want, page)
			}
		}
	}
	for _, in := range []cloud.Instance{web1, web2} {
		offers(page, in, map[string]bool{"power-on": false, "power-off": true, "reboot": true, "delete": true})
	}
	if !strings.Contains(page, "lab-owner") {
		t.Errorf("the page does not say whose the credential is:\n%s", page)
	}
	b.post("/ui/cloud/lab/instances/"+web1.ID+"/power-off", nil, http.StatusSeeOther)
	page = b.get("/ui/cloud/lab?accepted=cloud.power_off+"+web1.ID, http.StatusOK)
	if !regexp.MustCompile(`(?s)id="instance-` + regexp.QuoteMeta(web1.ID) + `".*?class="state-stopped"`).MatchString(page) {
		t.Fatalf("web-1 after power-off:\n%s", page)
	}
	offers(page, web1, map[string]bool{"power-on": true, "power-off": false, "reboot": false, "delete": true})
	refused := b.post("/ui/cloud/lab/instances/"+web1.ID+"/delete", url.Values{"confirm": {"web-2"}}, http.StatusConflict)
	if !strings.Contains(refused, errcode.CloudConfirmMismatch) || !strings.Contains(refused, `id="instance-`+web1.ID+`"`) {
		t.Fatalf("a delete confirmed with another label:\n%s", refused)
	}
	b.post("/ui/cloud/lab/instances/"+web1.ID+"/delete", url.Values{"confirm": {"web-1"}}, http.StatusSeeOther)
	if page := b.get("/ui/cloud/lab", http.StatusOK); strings.Contains(page, `id="instance-`+web1.ID+`"`) || !strings.Contains(page, `id="instance-`+web2.ID+`"`) {
		t.Fatalf("after deleting web-1:\n%s", page)
	}

	o := c.browser()
	o.signIn(operator)
	op := o.get("/ui/cloud/lab", http.StatusOK)
	if !strings.Contains(op, "/instances/"+web2.ID+"/reboot") || strings.Contains(op, "/delete") {
		t.Fatalf("an operator's page (reboot, no delete):\n%s", op)
	}
	o.post("/ui/cloud/lab/instances/"+web2.ID+"/reboot", nil, http.StatusSeeOther)
	if body := o.post("/ui/cloud/lab/instances/"+web2.ID+"/delete", url.Values{"confirm": {"web-2"}}, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Fatalf("an operator's delete: %s", body)
	}

	v := c.browser()
	v.signIn(viewer)
	if list := v.get("/ui/drivers", http.StatusOK); strings.Contains(list, `href="/ui/cloud/lab"`) {
		t.Fatal("a viewer is offered the instances page")
	}
	if body := v.get("/ui/cloud/lab", http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Fatalf("a viewer's instances page: %s", body)
	}
	for _, move := range []string{"power-on", "power-off", "reboot", "delete"} {
		if body := v.post("/ui/cloud/lab/instances/"+web2.ID+"/"+move, url.Values{"confirm": {"web-2"}}, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
			t.Errorf("a viewer's %s: %s", move, body)
		}
	}
	if _, err := c.mgr.CloudGet(t.Context(), "ui-admin", "lab", web2.ID); err != nil {
		t.Fatalf("web-2 after the refusals: %v", err)
	}
	for _, br := range []*browser{b, o, v} {
		for page, body := range br.pages {
			if strings.Contains(body, credential) {
				t.Errorf("%s shows the credential", page)
			}
		}
	}
}

// TestProvisionForm provisions through the form: it offers the plane's cloud accounts, shows a region
// the provider does not have next to its field with the plane's code, and a good request becomes a
// provisioning whose page the browser is sent to.
func TestProvisionForm(t *testing.T) {
	c, b, _ := newCloudPlane(t)
	list := b.get("/ui/provisionings", http.StatusOK)
	if !strings.Contains(list, `<option value="lab"`) {
		t.Fatalf("the form does not offer the cloud account:\n%s", list)
	}
	form := func(region string) url.Values {
		return url.Values{"name": {"web-9"}, "account": {"lab"}, "region": {region}, "type": {"small"}, "image": {"debian-12"}, "labels": {"role=web\ntier=1"}}
	}
	refused := b.post("/ui/provisionings", form("nowhere"), http.StatusBadRequest)
	if !regexp.MustCompile(`name="region" value="nowhere"[^\n]*\n\s*<span class="field-error">` + regexp.QuoteMeta(errcode.ProvisionUnknownRegion)).MatchString(refused) {
		t.Fatalf("an unknown region:\n%s", refused)
	}
	res, _ := b.do(http.MethodPost, "/ui/provisionings", withCSRF(form("test-1"), b.csrf))
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/provisionings/prov_") {
		t.Fatalf("provision: %d to %q", res.StatusCode, loc)
	}
	page := b.get(loc, http.StatusOK)
	if !strings.Contains(page, `id="provisioning-state" class="state-creating"`) || !strings.Contains(page, "<code>tier=1</code>") {
		t.Fatalf("the new provisioning:\n%s", page)
	}
	if over := b.get("/ui/", http.StatusOK); !strings.Contains(over, strings.TrimPrefix(loc, "/ui/provisionings/")) {
		t.Fatal("the overview does not list the new provisioning")
	}
	_ = c
}

func withCSRF(f url.Values, csrf string) url.Values {
	f.Set("csrf", csrf)
	return f
}
