package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/server"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// plane is a server on a fresh SQLite store with one approved node.
type plane struct {
	t    *testing.T
	st   store.Store
	url  string
	key  keys.NodePrivate
	node store.Node
}

func newPlane(t *testing.T, cfg server.Config) *plane {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "plane.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Store = st
	if cfg.ClaimWait == 0 {
		cfg.ClaimWait = 10 * time.Millisecond
	}
	ts := httptest.NewServer(server.New(cfg).Handler())
	t.Cleanup(ts.Close)
	k := keys.NewNode()
	j, err := st.JoinCreate(ctx, store.JoinCreateParams{Name: "n1", Key: k.Public().String(), Fingerprint: k.Public().Fingerprint(), SourceAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: k.Public().Fingerprint(), By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return &plane{t: t, st: st, url: ts.URL, key: k, node: res.Node}
}

// post sends body to path, signed by key unless key is zero, and returns the status and error code.
func (p *plane) post(path string, body []byte, key keys.NodePrivate) (int, string) {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.url+path, bytes.NewReader(body))
	if !key.IsZero() {
		if err := httpsig.Sign(req, body, key, time.Now()); err != nil {
			p.t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var env errcode.Envelope
	_ = json.NewDecoder(resp.Body).Decode(&env)
	return resp.StatusCode, env.Error.Code
}

func claimBody(extra string) []byte {
	b, _ := json.Marshal(channel.ClaimRequest{Idle: true, Version: "test", Vocabulary: []channel.Word{}, Recipes: []channel.RecipeReport{}})
	return append(b[:len(b)-1], []byte(extra+"}")...)
}

func TestClaimSetsUnknownFieldsAside(t *testing.T) {
	p := newPlane(t, server.Config{})
	if status, code := p.post(channel.PathClaim, claimBody(`,"from_the_future":{"x":1}`), p.key); status != 200 {
		t.Fatalf("claim with an unknown field: %d %s", status, code)
	}
}

func TestClaimCapRaisedByReportedSize(t *testing.T) {
	p := newPlane(t, server.Config{})
	pad := fmt.Sprintf(`,"padding":%q`, strings.Repeat("x", channel.DefaultBodyCap))
	if status, code := p.post(channel.PathClaim, claimBody(pad), p.key); status != 413 || code != errcode.RequestTooLarge {
		t.Fatalf("oversized claim: %d %s", status, code)
	}
	// The node reports that its claims are large; the next large one is taken.
	if status, _ := p.post(channel.PathClaim, claimBody(fmt.Sprintf(`,"claim_size":%d`, 4*channel.DefaultBodyCap)), p.key); status != 200 {
		t.Fatalf("claim reporting its size: %d", status)
	}
	if status, code := p.post(channel.PathClaim, claimBody(pad), p.key); status != 200 {
		t.Fatalf("large claim after reporting its size: %d %s", status, code)
	}
	// Never beyond the channel's hard cap.
	huge := fmt.Sprintf(`,"padding":%q`, strings.Repeat("x", channel.MaxClaimCap))
	if status, code := p.post(channel.PathClaim, claimBody(huge), p.key); status != 413 || code != errcode.RequestTooLarge {
		t.Fatalf("claim over the hard cap: %d %s", status, code)
	}
}

func TestRateLimitsPerNodeAndPerAddress(t *testing.T) {
	p := newPlane(t, server.Config{NodeRate: 1, NodeBurst: 3, AddrRate: 1, AddrBurst: 2})
	// A bad neighbour behind the same address burns the address's budget with requests that prove no
	// node...
	stranger := keys.NewNode()
	for range 5 {
		p.post(channel.PathClaim, claimBody(""), stranger)
	}
	if status, code := p.post(channel.PathClaim, claimBody(""), stranger); status != 429 || code != errcode.RequestRateLimited {
		t.Fatalf("unproven requests over the address limit: %d %s", status, code)
	}
	// ...and the signed node is not blocked by it; it has its own budget.
	for i := range 3 {
		if status, code := p.post(channel.PathClaim, claimBody(""), p.key); status != 200 {
			t.Fatalf("signed claim %d: %d %s", i, status, code)
		}
	}
	if status, code := p.post(channel.PathClaim, claimBody(""), p.key); status != 429 || code != errcode.RequestRateLimited {
		t.Fatalf("signed node over its own limit: %d %s", status, code)
	}
}

func TestJoinRefusals(t *testing.T) {
	p := newPlane(t, server.Config{MaxPendingJoins: 100, MaxPendingJoinsPerSource: 2, AddrBurst: 100, AddrRate: 100})
	join := func(name, key string, addrs ...string) (int, string) {
		b, _ := json.Marshal(channel.JoinRequest{Name: name, Key: key, Addresses: addrs})
		return p.post(channel.PathJoin, b, keys.NodePrivate{})
	}
	cases := []struct {
		name, key string
		addrs     []string
		code      string
	}{
		{"web-1", "publisher-key:AAAA", nil, errcode.RequestMalformed},
		{"../etc", keys.NewNode().Public().String(), nil, errcode.RequestMalformed},
		{"web-1", keys.NewNode().Public().String(), []string{"not-an-ip"}, errcode.RequestMalformed},
	}
	for _, tc := range cases {
		if status, code := join(tc.name, tc.key, tc.addrs...); code != tc.code {
			t.Fatalf("join %+v: %d %s", tc, status, code)
		}
	}
	for i := range 2 {
		if status, code := join(fmt.Sprintf("m%d", i), keys.NewNode().Public().String()); status != 202 {
			t.Fatalf("join %d: %d %s", i, status, code)
		}
	}
	if status, code := join("m3", keys.NewNode().Public().String()); code != errcode.JoinTooMany {
		t.Fatalf("join over the per-address cap: %d %s", status, code)
	}
}

func TestArtifactNeverTakesAPath(t *testing.T) {
	p := newPlane(t, server.Config{})
	for _, q := range []string{"path=/etc/passwd", "sha256=../../etc/passwd", "statement=current&sha256=" + strings.Repeat("a", 64)} {
		req, _ := http.NewRequest(http.MethodGet, p.url+channel.PathArtifact+"?"+q, nil)
		if err := httpsig.Sign(req, nil, p.key, time.Now()); err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var env errcode.Envelope
		_ = json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if resp.StatusCode != 400 || env.Error.Code != errcode.RequestMalformed {
			t.Fatalf("artifact?%s: %d %s", q, resp.StatusCode, env.Error.Code)
		}
	}
}

func TestAdminNeedsTokenAndRole(t *testing.T) {
	p := newPlane(t, server.Config{})
	ctx := context.Background()
	viewer, hash := server.NewToken()
	if _, err := p.st.TokenCreate(ctx, store.TokenCreateParams{Name: "v", Role: store.RoleViewer, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	call := func(token, method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, p.url+"/api/v1/admin"+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env errcode.Envelope
		_ = json.NewDecoder(resp.Body).Decode(&env)
		return resp.StatusCode, env.Error.Code
	}
	if status, code := call("", "GET", "/nodes", ""); status != 401 || code != errcode.AuthRequired {
		t.Fatalf("no token: %d %s", status, code)
	}
	if status, code := call(server.TokenPrefix+"forged", "GET", "/nodes", ""); status != 401 || code != errcode.AuthRequired {
		t.Fatalf("unknown token: %d %s", status, code)
	}
	if status, _ := call(viewer, "GET", "/nodes", ""); status != 200 {
		t.Fatalf("viewer reading: %d", status)
	}
	if status, code := call(viewer, "POST", "/jobs", `{"node":"n1","word":"host_report"}`); status != 403 || code != errcode.AuthForbidden {
		t.Fatalf("viewer queueing a job: %d %s", status, code)
	}
	if status, code := call(viewer, "POST", "/joins/x/approve", `{"fingerprint":"SHA256:x"}`); status != 403 || code != errcode.AuthForbidden {
		t.Fatalf("viewer approving: %d %s", status, code)
	}
}
