package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// cloudPlane is a driver plane with the mock cloud driver (account lab) and the basic one, which has
// no optional feature (account plain, marked test).
func cloudPlane(t *testing.T) *driverPlane {
	t.Helper()
	p := newDriverPlane(t)
	p.publish("mock", "basic")
	for _, d := range []string{"cloud-mock", "cloud-basic"} {
		p.want(http.StatusOK, "", store.RoleAdmin, http.MethodPost, "/drivers/"+d+"/enable", nil)
	}
	lab := p.want(http.StatusCreated, "", store.RoleAdmin, http.MethodPost, "/accounts",
		map[string]any{"driver": "cloud-mock", "name": "lab", "credential": credential})
	plain := p.want(http.StatusCreated, "", store.RoleAdmin, http.MethodPost, "/accounts",
		map[string]any{"driver": "cloud-basic", "name": "plain", "credential": credential, "test": true})
	if lab["test"] != false || plain["test"] != true {
		t.Fatalf("accounts %v %v", lab, plain)
	}
	return p
}

func newInstance(label string, tags ...string) map[string]any {
	return map[string]any{"region": "test-1", "type": "small", "image": "debian-12", "label": label, "tags": tags,
		"user_data": "#cloud-config\nruncmd: [true]\n"}
}

func TestCloudRoutes(t *testing.T) {
	p := cloudPlane(t)
	const (
		viewer   = store.RoleViewer
		operator = store.RoleOperator
		admin    = store.RoleAdmin
	)
	get, post := http.MethodGet, http.MethodPost

	// Create: an operator's; the request is checked before the driver is asked.
	p.want(http.StatusForbidden, "auth.forbidden", viewer, post, "/cloud/lab/instances", newInstance("web-1"))
	p.want(http.StatusNotFound, "account.not_found", operator, post, "/cloud/nowhere/instances", newInstance("web-1"))
	p.want(http.StatusBadRequest, "cloud.invalid", operator, post, "/cloud/lab/instances", newInstance("Web 1"))
	p.want(http.StatusBadRequest, "request.malformed", operator, post, "/cloud/lab/instances", map[string]any{"label": "x", "password": "y"})
	web := p.want(http.StatusCreated, "", operator, post, "/cloud/lab/instances", newInstance("web-1", "blue"))
	id := web["id"].(string)
	if web["label"] != "web-1" || web["status"] != "running" || len(web["tags"].([]any)) != 1 {
		t.Fatalf("created %v", web)
	}
	other := p.want(http.StatusCreated, "", operator, post, "/cloud/lab/instances", newInstance("web-2"))["id"].(string)

	got := p.want(http.StatusOK, "", operator, get, "/cloud/lab/instances/"+id, nil)
	if got["id"] != id || got["label"] != "web-1" {
		t.Fatalf("get %v", got)
	}
	p.want(http.StatusNotFound, "cloud.not_found", operator, get, "/cloud/lab/instances/m-999999", nil)
	// A provider id may hold a slash; it travels escaped in its one segment and reaches the driver whole.
	slashed := p.want(http.StatusNotFound, "cloud.not_found", operator, get, "/cloud/lab/instances/zone-a%2Fm-1", nil)
	if id := slashed["error"].(map[string]any)["details"].(map[string]any)["id"]; id != "zone-a/m-1" {
		t.Fatalf("the driver was asked for %v", id)
	}
	p.want(http.StatusForbidden, "auth.forbidden", viewer, get, "/cloud/lab/instances/"+id, nil)

	// Power and reboot answer once the provider accepted.
	for _, op := range []string{"power-off", "power-on", "reboot"} {
		ok := p.want(http.StatusOK, "", operator, post, "/cloud/lab/instances/"+id+"/"+op, nil)
		if ok["account"] != "lab" || !slices.Equal(ok["instances"].([]any), []any{id}) {
			t.Fatalf("%s: %v", op, ok)
		}
		p.want(http.StatusNotFound, "cloud.not_found", operator, post, "/cloud/lab/instances/m-999999/"+op, nil)
	}

	// The mock needs both instances stopped to swap, and says so.
	swap := map[string]any{"a": id, "b": other}
	p.want(http.StatusBadRequest, "cloud.conflict", operator, post, "/cloud/lab/swap-ipv4", swap)
	p.want(http.StatusOK, "", operator, post, "/cloud/lab/instances/"+id+"/power-off", nil)
	p.want(http.StatusOK, "", operator, post, "/cloud/lab/instances/"+other+"/power-off", nil)
	p.want(http.StatusOK, "", operator, post, "/cloud/lab/swap-ipv4", swap)
	ip := p.want(http.StatusOK, "", operator, get, "/cloud/lab/instances/"+id, nil)["ipv4"].([]any)[0].(string)

	p.want(http.StatusOK, "", operator, post, "/cloud/lab/instances/"+id+"/reverse-dns", map[string]any{"ip": ip, "hostname": "web-1.example.com"})
	p.want(http.StatusBadRequest, "cloud.invalid", operator, post, "/cloud/lab/instances/"+id+"/reverse-dns", map[string]any{"ip": "not-an-ip", "hostname": "x.example.com"})
	tr := p.want(http.StatusOK, "", operator, get, "/cloud/lab/instances/"+id+"/transfer", nil)
	if tr["used_bytes"].(float64) <= 0 || tr["instance"] != id {
		t.Fatalf("transfer %v", tr)
	}
	if types := p.want(http.StatusOK, "", operator, get, "/cloud/lab/regions/test-1/types", nil)["types"].([]any); len(types) == 0 {
		t.Fatal("no instance types")
	}
	if page := p.want(http.StatusOK, "", operator, get, "/cloud/lab/instances?page_size=1", nil)["instances"].([]any); len(page) != 1 {
		t.Fatalf("a page of one: %v", page)
	}
	acct := p.want(http.StatusOK, "", operator, get, "/cloud/lab/account", nil)
	if acct["driver"] != "cloud-mock" || acct["name"] == "" || acct["features"].(map[string]any)["ipv4_swap"] != true {
		t.Fatalf("account %v", acct)
	}

	// A driver without a feature answers cloud.unsupported, naming the enabled drivers that have it.
	a := p.want(http.StatusCreated, "", operator, post, "/cloud/plain/instances", newInstance("a"))["id"].(string)
	b := p.want(http.StatusCreated, "", operator, post, "/cloud/plain/instances", newInstance("b"))["id"].(string)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{post, "/cloud/plain/swap-ipv4", map[string]any{"a": a, "b": b}},
		{post, "/cloud/plain/instances/" + a + "/reverse-dns", map[string]any{"ip": "192.0.2.3", "hostname": "a.example.com"}},
		{get, "/cloud/plain/instances/" + a + "/transfer", nil},
	} {
		e := p.want(http.StatusBadRequest, "cloud.unsupported", operator, c.method, c.path, c.body)["error"].(map[string]any)
		if d := e["details"].(map[string]any)["drivers"]; !slices.Equal(d.([]any), []any{"cloud-mock"}) {
			t.Fatalf("%s: %v", c.path, e)
		}
	}
	plainAcct := p.want(http.StatusOK, "", operator, get, "/cloud/plain/account", nil)
	if plainAcct["test"] != true || plainAcct["features"].(map[string]any)["reverse_dns"] != false {
		t.Fatalf("plain account %v", plainAcct)
	}

	// Delete: an admin's, with the label typed back; a wrong one deletes nothing.
	p.want(http.StatusForbidden, "auth.forbidden", operator, post, "/cloud/lab/instances/"+id+"/delete", map[string]any{"confirm": "web-1"})
	p.want(http.StatusConflict, "cloud.confirm_mismatch", admin, post, "/cloud/lab/instances/"+id+"/delete", map[string]any{"confirm": "web-2"})
	p.want(http.StatusConflict, "cloud.confirm_mismatch", admin, post, "/cloud/lab/instances/"+id+"/delete", map[string]any{})
	p.want(http.StatusOK, "", operator, get, "/cloud/lab/instances/"+id, nil)
	p.want(http.StatusNotFound, "cloud.not_found", admin, post, "/cloud/lab/instances/m-999999/delete", map[string]any{"confirm": "x"})
	p.want(http.StatusNotFound, "account.not_found", admin, post, "/cloud/nowhere/instances/"+id+"/delete", map[string]any{"confirm": "web-1"})
	gone := p.want(http.StatusOK, "", admin, post, "/cloud/lab/instances/"+id+"/delete", map[string]any{"confirm": "web-1"})
	if gone["id"] != id {
		t.Fatalf("deleted %v", gone)
	}
	p.want(http.StatusNotFound, "cloud.not_found", operator, get, "/cloud/lab/instances/"+id, nil)

	// The test mark is an admin's to set.
	p.want(http.StatusForbidden, "auth.forbidden", operator, post, "/accounts/lab/test", map[string]any{"test": true})
	p.want(http.StatusNotFound, "account.not_found", admin, post, "/accounts/nowhere/test", map[string]any{"test": true})
	if m := p.want(http.StatusOK, "", admin, post, "/accounts/lab/test", map[string]any{"test": true}); m["test"] != true {
		t.Fatalf("marked %v", m)
	}

	// The audit log names who asked for each call.
	calls := p.want(http.StatusOK, "", viewer, get, "/drivers/audit?account=lab&limit=200", nil)["calls"].([]any)
	seen := map[string]string{}
	for _, c := range calls {
		c := c.(map[string]any)
		key := c["operation"].(string) + "=" + c["code"].(string)
		if _, ok := seen[key]; !ok {
			seen[key] = c["actor"].(string)
		}
	}
	for key, actor := range map[string]string{
		"cloud.delete_instance=ok": "tok-admin", "cloud.delete_instance=cloud.confirm_mismatch": "tok-admin",
		"cloud.create_instance=ok": "tok-operator", "cloud.swap_ipv4=cloud.conflict": "tok-operator",
		"cloud.set_reverse_dns=ok": "tok-operator", "cloud.monthly_transfer=ok": "tok-operator", "account.mark_test=ok": "tok-admin",
	} {
		if seen[key] != actor {
			t.Errorf("audit: %s by %q, want %q (%v)", key, seen[key], actor, seen)
		}
	}
}

// The intent of a call is in the audit log, pending, while the driver holds the call: a plane that
// died then would leave it there.
func TestCloudCallPendingWhileTheDriverHoldsIt(t *testing.T) {
	p := cloudPlane(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	body, _ := json.Marshal(newInstance("hang"))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/api/v1/admin/cloud/lab/instances", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.tokens[store.RoleOperator])
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	p.log.WaitFor(t, "hang-test: holding the call")
	calls := p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/drivers/audit?account=lab", nil)["calls"].([]any)
	c := calls[0].(map[string]any)
	if store.CodePending != api.DriverCallPending {
		t.Fatalf("the store writes %q for a pending call, clients look for %q", store.CodePending, api.DriverCallPending)
	}
	if c["operation"] != "cloud.create_instance" || c["code"] != api.DriverCallPending || c["actor"] != "tok-operator" || c["target"] != "hang" {
		t.Fatalf("while the driver holds the call, the newest record is %v", c)
	}
	cancel()
	<-done
}
