package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// oneCloud is a provider with one region and type whose instances all answer at 127.0.0.1, where the
// test's joins come from.
type oneCloud struct {
	mu        sync.Mutex
	instances map[string]cloud.Instance
	userData  string
}

func (c *oneCloud) Regions(context.Context, string, string) ([]cloud.Region, error) {
	return []cloud.Region{{ID: "r1"}}, nil
}
func (c *oneCloud) InstanceTypes(context.Context, string, string, string) ([]cloud.InstanceType, error) {
	return []cloud.InstanceType{{ID: "t1"}}, nil
}
func (c *oneCloud) Create(_ context.Context, _, _ string, req cloud.CreateRequest) (cloud.Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	inst := cloud.Instance{ID: "i-1", Status: cloud.StatusRunning, IPv4: []netip.Addr{netip.MustParseAddr("127.0.0.1")}, Tags: req.Tags}
	c.instances[inst.ID], c.userData = inst, req.UserData
	return inst, nil
}
func (c *oneCloud) Get(_ context.Context, _, _, id string) (cloud.Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inst, ok := c.instances[id]; ok {
		return inst, nil
	}
	return cloud.Instance{}, cloud.NotFound(id)
}
func (c *oneCloud) FindTagged(_ context.Context, _, _, tag string) (cloud.Instance, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, inst := range c.instances {
		if slices.Contains(inst.Tags, tag) {
			return inst, true, nil
		}
	}
	return cloud.Instance{}, false, nil
}
func (c *oneCloud) DeleteTagged(_ context.Context, _, _, id, _ string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.instances, id)
	return nil
}

func (c *oneCloud) Transfer(context.Context, string, string, string) (cloud.Transfer, error) {
	return cloud.Transfer{}, nil
}

// TestProvisionRoutes drives a provisioning through the admin routes and the agent channel: the
// provisioning is started (and refused on bad input, and to an operator), the machine fetches its
// agent with the token, joins with it, the engine approves the join, and the token cannot be reused.
func TestProvisionRoutes(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	fake := &oneCloud{instances: map[string]cloud.Instance{}}
	engine := &provision.Engine{Store: st, Cloud: fake, EngineBase: services.EngineBase{Holder: "test"}, Bootstrap: provision.Bootstrap{PlaneURL: "https://plane.example"}}
	p := &trustedPlane{plane: newPlaneOn(t, wire.Config{Provision: engine}, st), tokens: map[store.Role]string{}}
	for _, role := range []store.Role{store.RoleViewer, store.RoleOperator, store.RoleAdmin} {
		tok, hash := tokens.Mint()
		if _, err := st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "tok-" + string(role), Role: role, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		p.tokens[role] = tok
	}
	agentBin := []byte("pretend agent")
	sum := sha256.Sum256(agentBin)
	if _, err := st.ReleasePut(t.Context(), store.ReleasePutParams{Sequence: 1, Version: "1.0.0", StatementDigest: strings.Repeat("a", 64),
		Bundle: []byte(`{}`), Artifacts: []store.ArtifactPut{{Name: "agent/linux-amd64", Digest: hex.EncodeToString(sum[:]), Data: agentBin}}, By: "test"}); err != nil {
		t.Fatal(err)
	}

	body := func(mut func(*api.ProvisionRequest)) []byte {
		req := api.ProvisionRequest{Name: "web-7", Account: "lin", Region: "r1", Type: "t1", Image: "debian-13", Labels: map[string]string{"role": "web"}}
		mut(&req)
		b, _ := json.Marshal(req)
		return b
	}
	post, get := http.MethodPost, http.MethodGet
	p.want(http.StatusForbidden, errcode.AuthForbidden, store.RoleOperator, post, "/provisionings", body(func(*api.ProvisionRequest) {}), nil)
	p.want(http.StatusBadRequest, errcode.ProvisionUnknownRegion, store.RoleAdmin, post, "/provisionings", body(func(r *api.ProvisionRequest) { r.Region = "r9" }), nil)
	p.want(http.StatusBadRequest, errcode.ProvisionUnknownType, store.RoleAdmin, post, "/provisionings", body(func(r *api.ProvisionRequest) { r.Type = "t9" }), nil)
	p.want(http.StatusConflict, errcode.ProvisionNameTaken, store.RoleAdmin, post, "/provisionings", body(func(r *api.ProvisionRequest) { r.Name = "n1" }), nil)
	var pr api.Provisioning
	p.want(http.StatusCreated, "", store.RoleAdmin, post, "/provisionings", body(func(*api.ProvisionRequest) {}), &pr)
	if pr.State != api.ProvCreating || pr.CreatedBy != "tok-admin" || pr.Platform != "linux-amd64" {
		t.Fatalf("started: %+v", pr)
	}
	if err := engine.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.want(http.StatusOK, "", store.RoleViewer, get, "/provisionings/"+pr.ID, nil, &pr)
	if pr.State != api.ProvInstalling || pr.InstanceID != "i-1" || len(pr.Events) < 2 {
		t.Fatalf("after a pass: %+v", pr)
	}
	token := ""
	for _, line := range strings.Split(fake.userData, "\n") {
		if i := strings.Index(line, provision.TokenPrefix); i >= 0 && !strings.Contains(line, "Authorization") {
			token = strings.TrimSpace(line[i:])
		}
	}

	fetch := func(tok, query string) (int, string, []byte) {
		req, _ := http.NewRequest(get, p.url+channel.PathArtifact+"?"+query, nil)
		req.Header.Set("Authorization", provision.AuthScheme+" "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var env errcode.Envelope
		_ = json.Unmarshal(data, &env)
		return resp.StatusCode, env.Error.Code, data
	}
	if status, code, data := fetch(token, "agent=linux-amd64"); status != 200 || string(data) != string(agentBin) {
		t.Fatalf("agent fetch with the token: %d %s", status, code)
	}
	if status, code, _ := fetch(token, "statement=current"); code != errcode.RequestMalformed {
		t.Fatalf("a token fetching more than the agent: %d %s", status, code)
	}
	if status, code, _ := fetch(provision.TokenPrefix+strings.Repeat("B", 43), "agent=linux-amd64"); status != 403 || code != errcode.ProvisionTokenInvalid {
		t.Fatalf("agent fetch with a wrong token: %d %s", status, code)
	}

	join := func(tok string) (int, string, channel.JoinResponse) {
		k := keys.NewNode().Public()
		b, _ := json.Marshal(channel.JoinRequest{Name: "web-7", Key: k.String(), Token: tok})
		var resp channel.JoinResponse
		status, code := p.call(channel.PathJoin, b, keys.NodePrivate{}, &resp)
		return status, code, resp
	}
	status, code, jr := join(token)
	if status != http.StatusAccepted {
		t.Fatalf("join with the token: %d %s", status, code)
	}
	if status, code, _ := join(token); status != http.StatusConflict || code != errcode.ProvisionTokenUsed {
		t.Fatalf("join reusing the token: %d %s", status, code)
	}
	if status, code, _ := fetch(token, "agent=linux-amd64"); code != errcode.ProvisionTokenUsed {
		t.Fatalf("agent fetch with a spent token: %d %s", status, code)
	}
	if err := engine.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.want(http.StatusOK, "", store.RoleViewer, get, "/provisionings/"+pr.ID, nil, &pr)
	if pr.State != api.ProvJoined || pr.NodeID == "" || pr.JoinID != jr.JoinID {
		t.Fatalf("after the join: %+v", pr)
	}
	var joins api.JoinList
	p.want(http.StatusOK, "", store.RoleViewer, get, "/joins", nil, &joins)
	for _, j := range joins.Joins {
		if j.ID == jr.JoinID && (j.Status != api.JoinApproved || j.ProvisioningID != pr.ID) {
			t.Fatalf("the provisioned join: %+v", j)
		}
	}
	var list api.ProvisioningList
	p.want(http.StatusOK, "", store.RoleViewer, get, "/provisionings", nil, &list)
	if len(list.Provisionings) != 1 || !list.Provisionings[0].Final() {
		t.Fatalf("list: %+v", list)
	}
	// Adopt: the approved node n1 reports no address the instance has.
	adopt, _ := json.Marshal(api.AdoptRequest{Account: "lin", InstanceID: "i-1"})
	p.want(http.StatusConflict, errcode.ProvisionAddressMismatch, store.RoleAdmin, post, "/nodes/"+p.node.ID+"/adopt", adopt, nil)

	// Decommission: admin, the node's name typed back; a node the plane did not provision is refused.
	confirm := func(name string) []byte { b, _ := json.Marshal(api.DecommissionRequest{Confirm: name}); return b }
	p.want(http.StatusForbidden, errcode.AuthForbidden, store.RoleOperator, post, "/nodes/"+pr.NodeID+"/decommission", confirm("web-7"), nil)
	p.want(http.StatusBadRequest, errcode.UsageInvalid, store.RoleAdmin, post, "/nodes/"+pr.NodeID+"/decommission", confirm("web-8"), nil)
	p.want(http.StatusNotFound, errcode.ProvisionNotFound, store.RoleAdmin, post, "/nodes/"+p.node.ID+"/decommission", confirm(p.node.Name), nil)
	var d api.Decommissioned
	p.want(http.StatusOK, "", store.RoleAdmin, post, "/nodes/"+pr.NodeID+"/decommission", confirm("web-7"), &d)
	if d.Provisioning.State != api.ProvCleanedUp || d.Node.State != "disconnected" {
		t.Fatalf("decommissioned: %+v", d)
	}
	if _, err := fake.Get(t.Context(), "", "lin", "i-1"); !errcode.Has(err, errcode.CloudNotFound) {
		t.Fatalf("the instance after decommission: %v", err)
	}
}
