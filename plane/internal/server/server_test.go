package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/server"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// plane is a server on a fresh SQLite store with one approved node.
type plane struct {
	t    *testing.T
	st   store.Store
	srv  *server.Server
	url  string
	key  keys.NodePrivate
	node store.Node
}

func newPlane(t *testing.T, cfg wire.Config) *plane {
	t.Helper()
	return newPlaneOn(t, cfg, storetest.SQLiteOpener(t).Store)
}

// newPlaneOn is newPlane on the store st.
func newPlaneOn(t *testing.T, cfg wire.Config, st store.Store) *plane {
	t.Helper()
	ctx := context.Background()
	cfg.Store = st
	if cfg.ClaimWait == 0 {
		cfg.ClaimWait = 10 * time.Millisecond
	}
	srv := wire.New(cfg)
	ts := httptest.NewServer(checked(t, srv.Handler()))
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
	return &plane{t: t, st: st, srv: srv, url: ts.URL, key: k, node: res.Node}
}

// post sends body to path, signed by key unless key is zero, and returns the status and error code.
func (p *plane) post(path string, body []byte, key keys.NodePrivate) (int, string) {
	p.t.Helper()
	return p.call(path, body, key, nil)
}

// call is post that also decodes a successful answer into out, unless out is nil.
func (p *plane) call(path string, body []byte, key keys.NodePrivate, out any) (int, string) {
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
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			p.t.Fatalf("%s: %v: %s", path, err, data)
		}
	}
	var env errcode.Envelope
	_ = json.Unmarshal(data, &env)
	return resp.StatusCode, env.Error.Code
}

// exchange sends req and returns the status, the error envelope's code ("" for none) and the body.
func exchange(t testing.TB, req *http.Request) (int, string, []byte) {
	t.Helper()
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

func claimBody(extra string) []byte {
	b, _ := json.Marshal(channel.ClaimRequest{Idle: true, Version: "test", Vocabulary: []channel.Word{}, Recipes: []channel.RecipeReport{}})
	return append(b[:len(b)-1], []byte(extra+"}")...)
}

func TestClaimSetsUnknownFieldsAside(t *testing.T) {
	p := newPlane(t, wire.Config{})
	if status, code := p.post(channel.PathClaim, claimBody(`,"from_the_future":{"x":1}`), p.key); status != 200 {
		t.Fatalf("claim with an unknown field: %d %s", status, code)
	}
}

func TestClaimCapRaisedByReportedSize(t *testing.T) {
	p := newPlane(t, wire.Config{})
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
	p := newPlane(t, wire.Config{NodeRate: 1, NodeBurst: 3, AddrRate: 1, AddrBurst: 2})
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
	p := newPlane(t, wire.Config{MaxPendingJoins: 100, MaxPendingJoinsPerSource: 2, AddrBurst: 100, AddrRate: 100})
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
	p := newPlane(t, wire.Config{})
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
	p := newPlane(t, wire.Config{})
	ctx := context.Background()
	viewer, hash := tokens.Mint()
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
	if status, code := call(tokens.Prefix+"forged", "GET", "/nodes", ""); status != 401 || code != errcode.AuthRequired {
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

// TestResultBoundedOnIntake sends results no database would store as given: text cut inside a
// character, NUL, invalid UTF-8, fields over their caps. Each is stored bounded and the job ends; none
// leaves the job running, to be counted lost.
func TestResultBoundedOnIntake(t *testing.T) {
	for name, open := range map[string]func(testing.TB) storetest.Env{"SQLite": storetest.SQLiteOpener, "Postgres": storetest.PostgresOpener} {
		t.Run(name, func(t *testing.T) {
			p := newPlaneOn(t, wire.Config{}, open(t).Store)
			ctx := context.Background()
			noop := channel.Word{Name: "noop", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}
			claim, _ := json.Marshal(channel.ClaimRequest{Idle: true, Version: "test", Vocabulary: []channel.Word{noop}, Recipes: []channel.RecipeReport{}})
			// finish queues a job, claims it and reports body (a result with its job_id left for us
			// to fill in), then returns the job as stored.
			finish := func(result string) store.Job {
				t.Helper()
				if status, code := p.post(channel.PathClaim, claim, p.key); status != 200 {
					t.Fatalf("report vocabulary: %d %s", status, code)
				}
				job, err := p.st.JobCreate(ctx, store.JobCreateParams{NodeID: p.node.ID, Word: noop.Name, WordDigest: noop.Digest, Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "test"})
				if err != nil {
					t.Fatal(err)
				}
				var resp channel.ClaimResponse
				if status, code := p.call(channel.PathClaim, claim, p.key, &resp); status != 200 || resp.Job == nil || resp.Job.ID != job.ID {
					t.Fatalf("claim: %d %s %+v", status, code, resp.Job)
				}
				body := []byte(`{"job_id": "` + job.ID + `", ` + result[1:])
				if status, code := p.post(channel.PathResult, body, p.key); status != 200 {
					t.Fatalf("result: %d %s", status, code)
				}
				got, err := p.st.JobGet(ctx, store.JobGetParams{ID: job.ID})
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			text := func(field string, v any) string { b, _ := json.Marshal(v); return fmt.Sprintf("%q: %s", field, b) }

			// Text over its cap, cut at a byte inside a two-byte character; NUL; a code far too long.
			long := strings.Repeat("é", channel.TranscriptCap)
			j := finish(`{"outcome": "failed", ` + text("code", strings.Repeat("c", 1000)) + `, ` +
				text("message", "a\x00"+long) + `, ` + text("transcript", "b"+long) + `}`)
			if j.State != store.JobFailed {
				t.Fatalf("state %s", j.State)
			}
			for field, v := range map[string]struct {
				s   string
				cap int
			}{"code": {j.OutcomeCode, store.MaxRefLen}, "message": {j.OutcomeMessage, store.MaxMessageLen}, "transcript": {j.Transcript, channel.TranscriptCap}} {
				if len(v.s) > v.cap || !utf8.ValidString(v.s) || strings.ContainsRune(v.s, 0) || !strings.HasSuffix(v.s, "[cut]") {
					t.Fatalf("%s stored as %d bytes (cap %d), valid UTF-8 %v, ending %q", field, len(v.s), v.cap, utf8.ValidString(v.s), v.s[max(len(v.s)-10, 0):])
				}
			}

			// Output with invalid UTF-8 inside a string is kept, made valid.
			j = finish("{\"outcome\": \"completed\", \"output\": {\"name\": \"x\xff\xfey\"}}")
			if j.State != store.JobCompleted || !utf8.Valid(j.Output) || !json.Valid(j.Output) || !strings.Contains(string(j.Output), "x\uFFFD") {
				t.Fatalf("output with invalid UTF-8: %s %q", j.State, j.Output)
			}

			// Output over its cap fails the job and is dropped.
			j = finish(`{"outcome": "completed", "output": {"s": "` + strings.Repeat("x", channel.OutputCap) + `"}}`)
			if j.State != store.JobFailed || j.OutcomeCode != errcode.RequestTooLarge || len(j.Output) != 0 {
				t.Fatalf("output over its cap: %s %s, %d bytes kept", j.State, j.OutcomeCode, len(j.Output))
			}

			// The audit list is capped.
			calls := make([]channel.Capability, channel.AuditCap+50)
			for i := range calls {
				calls[i] = channel.Capability{Cap: "fs.read", Allowed: true}
			}
			j = finish(`{"outcome": "completed", ` + text("capabilities", calls) + `}`)
			var audit []channel.Capability
			if err := json.Unmarshal(j.Audit, &audit); err != nil || len(audit) != channel.AuditCap {
				t.Fatalf("audit: %d calls kept (cap %d), %v", len(audit), channel.AuditCap, err)
			}

			// A capability call's args are the node's raw JSON: invalid UTF-8 in them is made valid.
			j = finish("{\"outcome\": \"completed\", \"capabilities\": [{\"cap\": \"fs.read\", \"args\": {\"path\": \"/x\xff\"}, \"allowed\": true}]}")
			if j.State != store.JobCompleted || !utf8.Valid(j.Audit) || !strings.Contains(string(j.Audit), "/x\uFFFD") {
				t.Fatalf("audit with invalid UTF-8: %s %q", j.State, j.Audit)
			}
		})
	}
}

// report sends a busy node's claim with vocab, which the plane records and answers at once.
func (p *plane) report(key keys.NodePrivate, vocab ...channel.Word) {
	p.t.Helper()
	body, _ := json.Marshal(channel.ClaimRequest{Version: "test", Vocabulary: vocab, Recipes: []channel.RecipeReport{}})
	if status, code := p.post(channel.PathClaim, body, key); status != http.StatusOK {
		p.t.Fatalf("claim reporting %d words: %d %s", len(vocab), status, code)
	}
}

// claimJob sends an idle node's claim with vocab and returns the job it is handed, or nil.
func (p *plane) claimJob(vocab ...channel.Word) *channel.Job {
	p.t.Helper()
	body, _ := json.Marshal(channel.ClaimRequest{Idle: true, Version: "test", Vocabulary: vocab, Recipes: []channel.RecipeReport{}})
	var resp channel.ClaimResponse
	if status, code := p.call(channel.PathClaim, body, p.key, &resp); status != http.StatusOK {
		p.t.Fatalf("idle claim: %d %s", status, code)
	}
	return resp.Job
}

func jobBody(node, word string) []byte {
	b, _ := json.Marshal(api.JobRequest{Node: node, Word: word, Params: json.RawMessage(`{}`)})
	return b
}

// TestRolesOnAdminRoutes walks each role through the admin API: a viewer only reads; an operator queues
// words of class look and change but not destructive, by the class the signed manifest states rather
// than the one the node reports, and cancels and fails jobs; pairing, disconnecting and publishing are
// an admin's.
func TestRolesOnAdminRoutes(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	const viewer, operator, admin = store.RoleViewer, store.RoleOperator, store.RoleAdmin
	get, post := http.MethodGet, http.MethodPost
	rel := p.publish([]testWord{{name: "peek", class: manifest.ClassLook}, {name: "tweak", class: manifest.ClassChange}, {name: "wipe", class: manifest.ClassDestructive}}, nil)
	wipe := rel.words["wipe"]
	wipe.Class = string(manifest.ClassLook) // what the node says is not what authorises
	p.report(p.key, rel.words["peek"], rel.words["tweak"], wipe)

	for _, path := range []string{"/whoami", "/joins", "/nodes", "/nodes/" + p.node.ID, "/jobs", "/releases"} {
		p.want(http.StatusOK, "", viewer, get, path, nil, nil)
	}
	for _, w := range []string{"peek", "tweak", "wipe"} {
		p.want(http.StatusForbidden, errcode.AuthForbidden, viewer, post, "/jobs", jobBody(p.node.ID, w), nil)
	}
	jobs := map[string]store.Job{}
	for _, w := range []string{"peek", "tweak"} {
		var j store.Job
		p.want(http.StatusCreated, "", operator, post, "/jobs", jobBody(p.node.ID, w), &j)
		if j.State != store.JobQueued || j.Word != w || j.CreatedBy != "tok-operator" {
			t.Fatalf("%s queued by an operator: %+v", w, j)
		}
		jobs[w] = j
	}
	p.want(http.StatusForbidden, errcode.AuthForbidden, operator, post, "/jobs", jobBody(p.node.ID, "wipe"), nil)
	var destructive store.Job
	p.want(http.StatusCreated, "", admin, post, "/jobs", jobBody(p.node.ID, "wipe"), &destructive)
	if destructive.Class != string(manifest.ClassDestructive) || destructive.CreatedBy != "tok-admin" {
		t.Fatalf("wipe queued by an admin: %+v", destructive)
	}

	// Ending jobs is an operator's.
	p.want(http.StatusForbidden, errcode.AuthForbidden, viewer, post, "/jobs/"+jobs["peek"].ID+"/cancel", nil, nil)
	p.want(http.StatusForbidden, errcode.AuthForbidden, viewer, post, "/jobs/"+jobs["tweak"].ID+"/mark-failed", nil, nil)
	var j store.Job
	p.want(http.StatusOK, "", operator, post, "/jobs/"+jobs["peek"].ID+"/cancel", nil, &j)
	if j.State != store.JobCancelled || j.OutcomeCode != errcode.JobCancelled || j.FinishedBy != "tok-operator" {
		t.Fatalf("cancelled by an operator: %+v", j)
	}
	p.want(http.StatusOK, "", operator, post, "/jobs/"+jobs["tweak"].ID+"/mark-failed", []byte(`{"message":"stuck"}`), &j)
	if j.State != store.JobFailed || j.OutcomeCode != errcode.JobMarkedFailed || j.OutcomeMessage != "stuck" {
		t.Fatalf("failed by an operator: %+v", j)
	}

	// Pairing, disconnecting and publishing are an admin's; refused, they change nothing.
	k := keys.NewNode()
	pending, err := p.st.JoinCreate(t.Context(), store.JoinCreateParams{Name: "n2", Key: k.Public().String(), Fingerprint: k.Public().Fingerprint(), SourceAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	approve, _ := json.Marshal(map[string]string{"fingerprint": k.Public().Fingerprint()})
	next := tarRelease(t, p.build(p.pub, []testWord{{name: "peek", class: manifest.ClassLook}}, nil).dir)
	for _, role := range []store.Role{viewer, operator} {
		p.want(http.StatusForbidden, errcode.AuthForbidden, role, post, "/joins/"+pending.Join.ID+"/approve", approve, nil)
		p.want(http.StatusForbidden, errcode.AuthForbidden, role, post, "/joins/"+pending.Join.ID+"/reject", nil, nil)
		p.want(http.StatusForbidden, errcode.AuthForbidden, role, post, "/nodes/"+p.node.ID+"/disconnect", nil, nil)
		p.want(http.StatusForbidden, errcode.AuthForbidden, role, post, "/releases", next, nil)
	}
	if j, err := p.st.JoinGet(t.Context(), store.JoinGetParams{ID: pending.Join.ID}); err != nil || j.Status != store.JoinPending {
		t.Fatalf("join after refused approvals: %+v %v", j, err)
	}
	if n, err := p.st.NodeGet(t.Context(), store.NodeGetParams{ID: p.node.ID}); err != nil || n.State != store.NodeActive {
		t.Fatalf("node after refused disconnects: %+v %v", n, err)
	}
	if list, err := p.st.ReleaseList(t.Context(), store.ReleaseListParams{}); err != nil || len(list) != 1 {
		t.Fatalf("releases after refused publishes: %d %v", len(list), err)
	}
	var approved store.JoinApproveResult
	p.want(http.StatusOK, "", admin, post, "/joins/"+pending.Join.ID+"/approve", approve, &approved)
	if approved.Node.State != store.NodeActive || approved.Node.Name != "n2" {
		t.Fatalf("approved by an admin: %+v", approved)
	}
	p.want(http.StatusOK, "", admin, post, "/nodes/"+p.node.ID+"/disconnect", nil, nil)
	if n, err := p.st.NodeGet(t.Context(), store.NodeGetParams{ID: p.node.ID}); err != nil || n.State != store.NodeDisconnected {
		t.Fatalf("node disconnected by an admin: %+v %v", n, err)
	}
	p.want(http.StatusCreated, "", admin, post, "/releases", next, nil)
	// Tokens are an admin's: made (the secret in that answer only), listed without secrets, revoked.
	for _, role := range []store.Role{viewer, operator} {
		p.want(http.StatusForbidden, errcode.AuthForbidden, role, post, "/tokens", []byte(`{"name":"x","role":"admin"}`), nil)
		p.want(http.StatusForbidden, errcode.AuthForbidden, role, http.MethodGet, "/tokens", nil, nil)
	}
	var made api.NewToken
	p.want(http.StatusCreated, "", admin, post, "/tokens", []byte(`{"name":"x","role":"viewer"}`), &made)
	if !strings.HasPrefix(made.Secret, tokens.Prefix) || made.Token.Role != api.RoleViewer {
		t.Fatalf("a token made through the API: %+v", made.Token)
	}
	p.want(http.StatusUnprocessableEntity, errcode.TokenRoleInvalid, admin, post, "/tokens", []byte(`{"name":"y","role":"root"}`), nil)
	var listed api.TokenList
	p.want(http.StatusOK, "", admin, http.MethodGet, "/tokens", nil, &listed)
	if raw, _ := json.Marshal(listed); strings.Contains(string(raw), made.Secret) || strings.Contains(string(raw), tokens.Hash(made.Secret)) || len(listed.Tokens) < 4 {
		t.Fatalf("the token list: %s", raw)
	}
	p.want(http.StatusOK, "", admin, post, "/tokens/"+made.Token.ID+"/revoke", nil, nil)
	p.want(http.StatusBadRequest, errcode.TokenRevoked, admin, post, "/tokens/"+made.Token.ID+"/revoke", nil, nil)
}

// TestClaimFieldsReachTheNode sends a claim with every field a node reports and reads the node back
// from the store and through the admin API.
func TestClaimFieldsReachTheNode(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	vocab := []channel.Word{
		{Name: "disk_usage", Version: "1.2.0", Digest: strings.Repeat("b", 64), Class: "look"},
		{Name: "unit_restart", Version: "2.0.1", Digest: strings.Repeat("c", 64), Class: "change"},
	}
	recipes := []channel.RecipeReport{{Name: "disk_full", Version: "1.0.0", Digest: strings.Repeat("d", 64), State: channel.RecipeActive,
		LastVerdict: channel.VerdictFail, LastCheckAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Detail: "/var at 97%"}}
	body, _ := json.Marshal(channel.ClaimRequest{Idle: false, Version: "1.4.2", Statement: channel.StatementRef{Sequence: 7, Digest: strings.Repeat("e", 64)},
		Vocabulary: vocab, Recipes: recipes})
	if status, code := p.post(channel.PathClaim, body, p.key); status != http.StatusOK {
		t.Fatalf("claim: %d %s", status, code)
	}
	check := func(from string, n store.Node, idle bool) {
		t.Helper()
		if n.AgentVersion != "1.4.2" || n.StatementSequence != 7 || n.StatementDigest != strings.Repeat("e", 64) || n.Idle != idle {
			t.Fatalf("%s: version %q, statement %d %q, idle %v", from, n.AgentVersion, n.StatementSequence, n.StatementDigest, n.Idle)
		}
		want := []store.WordRef{{Name: "disk_usage", Version: "1.2.0", Digest: strings.Repeat("b", 64), Class: "look"},
			{Name: "unit_restart", Version: "2.0.1", Digest: strings.Repeat("c", 64), Class: "change"}}
		if !reflect.DeepEqual(n.Vocabulary, want) {
			t.Fatalf("%s: vocabulary %+v", from, n.Vocabulary)
		}
		var got []channel.RecipeReport
		if err := json.Unmarshal(n.Recipes, &got); err != nil || !reflect.DeepEqual(got, recipes) {
			t.Fatalf("%s: recipes %s (%v)", from, n.Recipes, err)
		}
	}
	n, err := p.st.NodeGet(t.Context(), store.NodeGetParams{ID: p.node.ID})
	if err != nil {
		t.Fatal(err)
	}
	check("store", n, false)
	var shown store.Node
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes/"+p.node.ID, nil, &shown)
	check("admin API", shown, false)

	// The idle flag follows the latest claim.
	body, _ = json.Marshal(channel.ClaimRequest{Idle: true, Version: "1.4.2", Statement: channel.StatementRef{Sequence: 7, Digest: strings.Repeat("e", 64)},
		Vocabulary: vocab, Recipes: recipes})
	if status, code := p.post(channel.PathClaim, body, p.key); status != http.StatusOK {
		t.Fatalf("idle claim: %d %s", status, code)
	}
	if n, err = p.st.NodeGet(t.Context(), store.NodeGetParams{ID: p.node.ID}); err != nil {
		t.Fatal(err)
	}
	check("store after an idle claim", n, true)
}

// TestJobBudget queues a word without a wall-time limit and one with its own: the first gets 15
// minutes, the second its limit and a minute for fetching and reporting, and each claim's deadline is
// the claim time plus the budget.
func TestJobBudget(t *testing.T) {
	clk := testkit.NewClock(time.Now().UTC().Truncate(time.Second))
	p := newTrustedPlane(t, wire.Config{Now: clk.Now})
	rel := p.publish([]testWord{{name: "plain", class: manifest.ClassLook}, {name: "timed", class: manifest.ClassLook, wallMS: 30_000}}, nil)
	vocab := []channel.Word{rel.words["plain"], rel.words["timed"]}
	p.report(p.key, vocab...)
	for _, tc := range []struct {
		word   string
		budget time.Duration
	}{{"plain", 15 * time.Minute}, {"timed", 30*time.Second + time.Minute}} {
		var queued store.Job
		p.want(http.StatusCreated, "", store.RoleOperator, http.MethodPost, "/jobs", jobBody(p.node.ID, tc.word), &queued)
		if queued.Budget != tc.budget {
			t.Fatalf("%s queued with budget %s, want %s", tc.word, queued.Budget, tc.budget)
		}
		handed := p.claimJob(vocab...)
		if handed == nil || handed.ID != queued.ID || !handed.Deadline.Equal(clk.Now().Add(tc.budget)) {
			t.Fatalf("%s handed out as %+v, want deadline %s", tc.word, handed, clk.Now().Add(tc.budget))
		}
		stored, err := p.st.JobGet(t.Context(), store.JobGetParams{ID: queued.ID})
		if err != nil {
			t.Fatal(err)
		}
		if stored.Budget != tc.budget || !stored.ClaimedAt.Equal(clk.Now()) || !stored.DeadlineAt.Equal(clk.Now().Add(tc.budget)) {
			t.Fatalf("%s stored with budget %s, claimed %s, deadline %s", tc.word, stored.Budget, stored.ClaimedAt, stored.DeadlineAt)
		}
		result, _ := json.Marshal(channel.ResultRequest{JobID: queued.ID, Outcome: channel.OutcomeCompleted})
		if status, code := p.post(channel.PathResult, result, p.key); status != http.StatusOK {
			t.Fatalf("%s result: %d %s", tc.word, status, code)
		}
	}
}

// TestJobStatusAnswersOnlyTheNodesOwnJob asks the agent route job_status for a job as the node that runs
// it, as another node, and for a job that does not exist.
func TestJobStatusAnswersOnlyTheNodesOwnJob(t *testing.T) {
	p := newPlane(t, wire.Config{})
	ctx := t.Context()
	other := keys.NewNode()
	j, err := p.st.JoinCreate(ctx, store.JoinCreateParams{Name: "n2", Key: other.Public().String(), Fingerprint: other.Public().Fingerprint(), SourceAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.st.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: other.Public().Fingerprint(), By: "test"}); err != nil {
		t.Fatal(err)
	}
	noop := channel.Word{Name: "noop", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}
	p.report(p.key, noop)
	job, err := p.st.JobCreate(ctx, store.JobCreateParams{NodeID: p.node.ID, Word: noop.Name, WordDigest: noop.Digest, Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	status := func(key keys.NodePrivate, id string) (int, string, channel.JobStatusResponse) {
		t.Helper()
		body, _ := json.Marshal(channel.JobStatusRequest{JobID: id})
		var resp channel.JobStatusResponse
		s, code := p.call(channel.PathJobStatus, body, key, &resp)
		return s, code, resp
	}
	if s, code, resp := status(p.key, job.ID); s != http.StatusOK || resp.JobID != job.ID || resp.State != store.JobQueued {
		t.Fatalf("own queued job: %d %s %+v", s, code, resp)
	}
	if h := p.claimJob(noop); h == nil || h.ID != job.ID {
		t.Fatalf("claim: %+v", h)
	}
	if s, code, resp := status(p.key, job.ID); s != http.StatusOK || resp.State != store.JobRunning {
		t.Fatalf("own running job: %d %s %+v", s, code, resp)
	}
	if s, code, resp := status(other, job.ID); s != http.StatusNotFound || code != errcode.JobNotFound || resp != (channel.JobStatusResponse{}) {
		t.Fatalf("another node's job: %d %s %+v", s, code, resp)
	}
	if s, code, _ := status(p.key, "job_nosuch"); s != http.StatusNotFound || code != errcode.JobNotFound {
		t.Fatalf("unknown job: %d %s", s, code)
	}
	if s, code, _ := status(keys.NodePrivate{}, job.ID); s != http.StatusUnauthorized || code != errcode.ChannelUnsigned {
		t.Fatalf("unsigned: %d %s", s, code)
	}
}

// TestWordShowsNodeReach: a node's claim carries each word's reach as its policy narrows it; the word
// route answers it beside the manifest's, and only for the module the node reports now.
func TestWordShowsNodeReach(t *testing.T) {
	p := newTrustedPlane(t, wire.Config{})
	rel := p.publish([]testWord{{name: "probe", class: manifest.ClassLook, params: `{}`,
		caps: `[{"cap":"net.http","hosts":["@self"]},{"cap":"fs.read","paths":["/etc/nginx"]}]`}}, nil)
	w := rel.words["probe"]
	claim := func(digest string) {
		t.Helper()
		body, _ := json.Marshal(channel.ClaimRequest{Version: "test", Vocabulary: []channel.Word{w}, Recipes: []channel.RecipeReport{},
			Reach: []channel.WordReach{{Word: "probe", Digest: digest, Caps: []channel.CapReach{
				{Cap: "net.http", Hosts: []string{"www.example.test"}, Narrowed: true},
				{Cap: "fs.read", Roots: []string{"/etc/nginx"}}}}}})
		if status, code := p.post(channel.PathClaim, body, p.key); status != http.StatusOK {
			t.Fatalf("claim: %d %s", status, code)
		}
	}
	claim(w.Digest)
	var got api.Word
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes/"+p.node.ID+"/words/probe", nil, &got)
	if len(got.Reach) != 2 || got.Reach[0].Hosts[0] != "@self" {
		t.Fatalf("the manifest's reach: %+v", got.Reach)
	}
	if got.NodeReach == nil || len(got.NodeReach.Caps) != 2 || got.NodeReach.Caps[0].Hosts[0] != "www.example.test" || !got.NodeReach.Caps[0].Narrowed {
		t.Fatalf("the node's reach: %+v", got.NodeReach)
	}
	// A reach reported for another module of the word is not this one's.
	claim(strings.Repeat("0", 64))
	got = api.Word{}
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes/"+p.node.ID+"/words/probe", nil, &got)
	if got.NodeReach != nil || len(got.Reach) != 2 {
		t.Fatalf("a reach of another module shown: %+v", got.NodeReach)
	}
}

// TestDrainEndsLongPollsWithoutAJob: once the plane drains (it is stopping), a held claim returns with
// no job, a job queued then stays queued for the plane that comes next, and a claim made after the
// drain takes none either. A job handed out by a stopping plane could be marked running while its
// answer never reaches the node, which then loses it by claiming idle.
func TestDrainEndsLongPollsWithoutAJob(t *testing.T) {
	p := newPlane(t, wire.Config{ClaimWait: time.Minute})
	vocab := []channel.Word{{Name: "w", Version: "1.0.0", Digest: strings.Repeat("b", 64), Class: "look"}}
	claim := func(idle bool) channel.ClaimResponse {
		body, _ := json.Marshal(channel.ClaimRequest{Idle: idle, Version: "1.0.0", Vocabulary: vocab})
		var resp channel.ClaimResponse
		if status, code := p.call(channel.PathClaim, body, p.key, &resp); status != http.StatusOK {
			t.Errorf("claim: %d %s", status, code)
		}
		return resp
	}
	claim(false) // the node reports its word
	held := make(chan channel.ClaimResponse, 1)
	go func() { held <- claim(true) }()
	for {
		n, err := p.st.NodeGet(t.Context(), store.NodeGetParams{ID: p.node.ID})
		if err != nil {
			t.Fatal(err)
		}
		if n.Idle { // the idle claim has reported; it holds, or is about to
			break
		}
		time.Sleep(5 * time.Millisecond) // polls the store for the report, not a wait for time to pass
	}
	p.srv.Drain()
	job, err := p.st.JobCreate(t.Context(), store.JobCreateParams{NodeID: p.node.ID, Word: "w", Class: "look", Params: []byte(`{}`),
		Budget: time.Minute, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-held; got.Job != nil {
		t.Fatalf("a draining plane handed out %s", got.Job.ID)
	}
	if got := claim(true); got.Job != nil {
		t.Fatalf("a claim after the drain took %s", got.Job.ID)
	}
	if j, err := p.st.JobGet(t.Context(), store.JobGetParams{ID: job.ID}); err != nil || j.State != store.JobQueued {
		t.Fatalf("the job after the drain: %+v, %v", j, err)
	}
}
