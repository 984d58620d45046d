package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// provisioning records a provisioning as the engine would leave it: moved through states, with a
// reason when it failed.
func (p *plane) provisioning(name string, states ...store.ProvisioningState) store.Provisioning {
	p.t.Helper()
	ctx := context.Background()
	pr, err := p.store.ProvisioningCreate(ctx, store.ProvisioningCreateParams{Name: name, Account: "lab", Region: "test-1", Type: "small",
		Image: "debian-13", Labels: map[string]string{"role": "web"}, By: "ui-admin", Now: time.Now()})
	if err != nil {
		p.t.Fatal(err)
	}
	for _, s := range states {
		up := store.ProvisioningUpdateParams{ID: pr.ID, From: pr.State, To: s, By: store.AuthorPlane, Now: time.Now(), Detail: "moved to " + string(s)}
		switch s {
		case store.ProvBooting:
			up.InstanceID, up.Addresses = "i-"+name, []string{"192.0.2.7"}
		case store.ProvFailed:
			up.Reason = "timed out: installing for over 20m0s"
		}
		res, err := p.store.ProvisioningUpdate(ctx, up)
		if err != nil || !res.Moved {
			p.t.Fatalf("move %s to %s: %v %+v", name, s, err, res)
		}
		pr = res.Provisioning
	}
	return pr
}

// TestProvisioningPages lists provisionings (filtered by state and by being under way), shows one
// with its states, timeline and reason, lists those under way on the overview, and offers the
// provision form to admins only: a viewer's crafted POST is refused, and a plane without drivers
// says so on the form's answer.
func TestProvisioningPages(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	viewer, _ := p.token(store.RoleViewer)
	booting := p.provisioning("web-1", store.ProvBooting)
	failed := p.provisioning("web-2", store.ProvBooting, store.ProvInstalling, store.ProvFailed)
	done := p.provisioning("web-3", store.ProvFailed, store.ProvCleanedUp)
	evil := p.provisioning("evil")
	if _, err := p.store.ProvisioningUpdate(context.Background(), store.ProvisioningUpdateParams{ID: evil.ID, From: evil.State, To: evil.State,
		Reason: attack, Detail: attack, By: store.AuthorPlane, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}

	b := p.browser()
	b.signIn(admin)
	list := b.get("/ui/provisionings", http.StatusOK)
	for _, pr := range []store.Provisioning{booting, failed, done} {
		if !strings.Contains(list, `href="/ui/provisionings/`+pr.ID+`"`) {
			t.Fatalf("the list lacks %s:\n%s", pr.Name, list)
		}
	}
	if !strings.Contains(list, `id="provision-form"`) || !strings.Contains(list, `id="drivers-unavailable"`) {
		t.Fatalf("an admin's list on a plane without drivers:\n%s", list)
	}
	open := b.get("/ui/provisionings?open=true", http.StatusOK)
	if !strings.Contains(open, booting.ID) || !strings.Contains(open, failed.ID) || strings.Contains(open, done.ID) {
		t.Fatalf("provisionings under way:\n%s", open)
	}
	if s := b.get("/ui/provisionings?state=failed", http.StatusOK); !strings.Contains(s, failed.ID) || strings.Contains(s, booting.ID) {
		t.Fatalf("failed provisionings:\n%s", s)
	}
	if body := b.get("/ui/provisionings?state=lost", http.StatusUnprocessableEntity); !strings.Contains(body, errcode.StoreParamInvalid) {
		t.Fatalf("an unknown state: %s", body)
	}

	one := b.get("/ui/provisionings/"+failed.ID, http.StatusOK)
	for _, want := range []string{`id="provisioning-state" class="state-failed"`, "timed out: installing for over 20m0s", "i-web-2", "192.0.2.7",
		"<code>role=web</code>", "moved to booting", "moved to installing", "moved to failed"} {
		if !strings.Contains(one, want) {
			t.Fatalf("the provisioning page lacks %q:\n%s", want, one)
		}
	}
	if !strings.Contains(one, `id="refresh"`) {
		t.Error("a failed provisioning with an instance to delete offers no refresh")
	}
	if d := b.get("/ui/provisionings/"+done.ID, http.StatusOK); strings.Contains(d, `id="refresh"`) {
		t.Error("a cleaned-up provisioning offers a refresh")
	}
	if body := b.get("/ui/provisionings/prov_nosuch", http.StatusNotFound); !strings.Contains(body, errcode.ProvisionNotFound) {
		t.Fatalf("an unknown provisioning: %s", body)
	}
	ev := b.get("/ui/provisionings/"+evil.ID, http.StatusOK)
	if strings.Contains(ev, "<script>alert") || !strings.Contains(ev, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("a reason holding HTML:\n%s", ev)
	}

	over := b.get("/ui/", http.StatusOK)
	m := regexp.MustCompile(`(?s)id="open-provisionings".*?</table>`).FindString(over)
	if !strings.Contains(m, booting.ID) || !strings.Contains(m, failed.ID) || strings.Contains(m, done.ID) {
		t.Fatalf("the overview's provisionings under way:\n%s", m)
	}

	form := url.Values{"name": {"web-9"}, "account": {"lab"}, "region": {"test-1"}, "type": {"small"}, "image": {"debian-13"}, "labels": {"role=web, tier=1"}}
	body := b.post("/ui/provisionings", form, http.StatusServiceUnavailable)
	if !strings.Contains(body, errcode.DriverUnavailable) || !strings.Contains(body, `value="web-9"`) {
		t.Fatalf("provisioning on a plane without drivers:\n%s", body)
	}
	bad := url.Values{"name": {"web-9"}, "labels": {"role"}}
	if body := b.post("/ui/provisionings", bad, http.StatusBadRequest); !strings.Contains(body, "Labels are key=value") {
		t.Fatalf("a label without a value:\n%s", body)
	}

	v := p.browser()
	v.signIn(viewer)
	vl := v.get("/ui/provisionings", http.StatusOK)
	if strings.Contains(vl, `id="provision-form"`) || !strings.Contains(vl, booting.ID) {
		t.Fatalf("a viewer's list:\n%s", vl)
	}
	form.Del("csrf") // the admin's, set by the admin's post
	if body := v.post("/ui/provisionings", form, http.StatusForbidden); !strings.Contains(body, errcode.AuthForbidden) {
		t.Fatalf("a viewer's provision POST: %s", body)
	}
	v.get("/ui/provisionings/"+booting.ID, http.StatusOK)
}

// TestNodePageShowsLeases: the node page shows who holds the node's change lease and why, as
// `lexicon nodes show` does (here a provisioning's post-join work).
func TestNodePageShowsLeases(t *testing.T) {
	p := newPlane(t)
	admin, _ := p.token(store.RoleAdmin)
	n := storetest.Node(t, p.store, "web-1", "0.1.0", time.Now())
	b := p.browser()
	b.signIn(admin)
	if page := b.get("/ui/nodes/"+n.ID, http.StatusOK); !strings.Contains(page, `id="leases">none`) {
		t.Fatalf("a node without leases:\n%s", page)
	}
	holder := provision.NodeHolder("prov_1")
	if _, err := p.store.LeaseAcquire(t.Context(), store.LeaseAcquireParams{Subject: n.ID, Name: store.LeaseChange, Holder: holder,
		Purpose: "provisioning prov_1: labels and DNS", TTL: time.Minute, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if page := b.get("/ui/nodes/"+n.ID, http.StatusOK); !strings.Contains(page, "<code>change</code> held by "+holder+" (provisioning prov_1: labels and DNS)") {
		t.Fatalf("a node with a lease:\n%s", page)
	}
}
