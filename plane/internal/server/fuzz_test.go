package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// The fuzz targets send arbitrary bodies through the plane's real handler (routing, authentication,
// signatures, rate limits, decoding, the store) and hold every answer to the API's promises: no panic,
// no failure of the plane's own (internal.error, or any 5xx but a driver's or a busy store's), a
// success only with the route's declared status, and every refusal the JSON envelope with a code
// declared in sdk/errcode. Each input is one request to an in-process handler on a SQLite store, so
// an input costs a signature and a few queries.

// dependency5xx are the 5xx answers a request may get through no fault of the plane's: a driver's
// failure or a busy store.
var dependency5xx = map[string]bool{
	errcode.DriverUnavailable: true, errcode.DriverStartFailed: true, errcode.DriverCrashed: true,
	errcode.DriverInternal: true, errcode.DriverTimeout: true, errcode.ChannelBusy: true,
	errcode.StoreBusy: true, errcode.StoreUnavailable: true,
}

// declaredCodes reads every code constant of package errcode from its source, so that a handler that
// invents a code (or forwards one from elsewhere) fails the fuzz targets.
func declaredCodes(tb testing.TB) map[string]bool {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "sdk", "errcode", "*.go"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("cannot find sdk/errcode: %v", err)
	}
	codes := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			tb.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(s, ".") {
							codes[s] = true
						}
					}
				}
			}
		}
	}
	if !codes[errcode.RequestMalformed] || !codes[errcode.ContractBroken] {
		tb.Fatalf("read %d codes from sdk/errcode, without request.malformed or contract.broken", len(codes))
	}
	return codes
}

// fuzzPlane is a plane handler on a SQLite store with a driver manager (no driver installed), an admin
// token, one active node, one pending join and one queued job.
type fuzzPlane struct {
	h       http.Handler
	codes   map[string]bool
	admin   string
	node    store.Node
	nodeKey keys.NodePrivate
	// ending is a second node for the routes that end a node (disconnect, leave), so that node stays
	// active for the others.
	ending   store.Node
	endKey   keys.NodePrivate
	joinKey  keys.NodePrivate
	joinID   string
	jobID    string
	release  []byte // a tar of a valid release signed by a trusted key
	joinBody []byte
}

func newFuzzPlane(f *testing.F) *fuzzPlane {
	f.Helper()
	ctx := f.Context()
	dir := f.TempDir()
	st := storetest.SQLiteOpener(f).Store
	pub := keys.NewPublisher()
	trust := filepath.Join(dir, "trust")
	if err := registry.InitTrust(trust, []keys.PublisherPublic{pub.Public()}, nil); err != nil {
		f.Fatal(err)
	}
	key, err := seal.LoadOrCreate(filepath.Join(dir, "master.key"))
	if err != nil {
		f.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr, err := drivers.New(drivers.Config{Store: st, Dir: filepath.Join(dir, "drivers"), Key: key, Log: quiet})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(mgr.Close)
	srv := wire.New(wire.Config{
		Store: st, TrustDir: trust, Log: quiet, Drivers: mgr, ClaimWait: time.Millisecond,
		NodeRate: 1e9, NodeBurst: 1 << 30, AddrRate: 1e9, AddrBurst: 1 << 30,
	})
	p := &fuzzPlane{h: srv.Handler(), codes: declaredCodes(f), nodeKey: keys.NewNode(), joinKey: keys.NewNode()}
	tok, hash := tokens.Mint()
	if _, err := st.TokenCreate(ctx, store.TokenCreateParams{Name: "fuzz-admin", Role: store.RoleAdmin, Hash: hash}); err != nil {
		f.Fatal(err)
	}
	p.admin = tok
	pair := func(name string, k keys.NodePrivate) store.Node {
		j, err := st.JoinCreate(ctx, store.JoinCreateParams{Name: name, Key: k.Public().String(), Fingerprint: k.Public().Fingerprint(), SourceAddress: "192.0.2.1"})
		if err != nil {
			f.Fatal(err)
		}
		res, err := st.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: k.Public().Fingerprint(), By: "fuzz"})
		if err != nil {
			f.Fatal(err)
		}
		return res.Node
	}
	p.endKey = keys.NewNode()
	p.node, p.ending = pair("n1", p.nodeKey), pair("n9", p.endKey)
	pending, err := st.JoinCreate(ctx, store.JoinCreateParams{Name: "n2", Key: p.joinKey.Public().String(), Fingerprint: p.joinKey.Public().Fingerprint(), SourceAddress: "192.0.2.1"})
	if err != nil {
		f.Fatal(err)
	}
	p.joinID = pending.Join.ID
	// The node reports the word the job runs; the job is made through the store, since no release pins it.
	if _, err := st.NodeReport(ctx, store.NodeReportParams{ID: p.node.ID, Now: time.Now(), AgentVersion: "test", Idle: true,
		Vocabulary: []store.WordRef{{Name: "probe", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}}}); err != nil {
		f.Fatal(err)
	}
	job, err := st.JobCreate(ctx, store.JobCreateParams{NodeID: p.node.ID, Word: "probe", Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "fuzz", Now: time.Now()})
	if err != nil {
		f.Fatal(err)
	}
	p.jobID = job.ID
	p.release = fuzzRelease(f, pub)
	p.joinBody, _ = json.Marshal(channel.JoinRequest{Name: "n3", Key: keys.NewNode().Public().String(), Addresses: []string{"192.0.2.7"}, AgentVersion: "test"})
	return p
}

// fuzzRelease builds a one-word release signed by pub and returns it as the publish route takes it.
func fuzzRelease(f *testing.F, pub keys.PublisherPrivate) []byte {
	mods := filepath.Join(f.TempDir(), "modules", "probe")
	mf := `{"schema":"lexicon/manifest/v1","name":"probe","kind":"word","version":"1.0.0","class":"look","summary":"test",` +
		`"params":{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integer"}}},"output":{"type":"object"},"module":{"file":"probe.wasm"}}`
	if err := os.MkdirAll(mods, 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mods, "manifest.json"), []byte(mf), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mods, "probe.wasm"), []byte("\x00asm\x01\x00\x00\x00probe"), 0o644); err != nil {
		f.Fatal(err)
	}
	out := filepath.Join(f.TempDir(), "release")
	if _, err := registry.Build(registry.BuildOptions{Key: pub, ModulesDir: filepath.Dir(mods), Release: "1.0.0", Sequence: 1, OutDir: out}); err != nil {
		f.Fatal(err)
	}
	return tarRelease(f, out)
}

// check holds one answer to the promises above; declared is the route's success status.
func (p *fuzzPlane) check(t *testing.T, what string, rec *httptest.ResponseRecorder, declared ...int) {
	t.Helper()
	body := rec.Body.Bytes()
	if rec.Code/100 == 2 {
		for _, s := range declared {
			if rec.Code == s {
				return
			}
		}
		t.Fatalf("%s: success %d, the route declares %v: %s", what, rec.Code, declared, body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: %d answered as %q: %s", what, rec.Code, ct, body)
	}
	var env struct {
		Error *errcode.Body `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || env.Error == nil || env.Error.Message == "" {
		t.Fatalf("%s: %d is not the error envelope (%v): %s", what, rec.Code, err, body)
	}
	code := env.Error.Code
	switch {
	case code == errcode.InternalError:
		t.Fatalf("%s: the plane failed on its own: %s", what, body)
	case !p.codes[code]:
		t.Fatalf("%s: code %q is not declared in sdk/errcode: %s", what, code, body)
	case rec.Code >= 500 && !dependency5xx[code]:
		t.Fatalf("%s: %d %s is not a dependency's failure: %s", what, rec.Code, code, body)
	}
}

// adminPost is an admin POST route with its parameters filled, and a valid body to seed it with.
type adminPost struct {
	route api.Route
	path  string
	seed  []byte
}

func (p *fuzzPlane) adminPosts(tb testing.TB) []adminPost {
	value := func(rt api.Route, param string) string {
		switch {
		case param == "id" && strings.HasPrefix(rt.Pattern, "/joins/"):
			return p.joinID
		case param == "id" && strings.HasPrefix(rt.Pattern, "/nodes/"):
			return p.ending.ID
		case param == "id" && strings.HasPrefix(rt.Pattern, "/jobs/"):
			return p.jobID
		case param == "id":
			return "1"
		case param == "zone":
			return "example.com"
		case strings.HasPrefix(rt.Pattern, "/drivers/"):
			return "dns-memory"
		}
		return "acct"
	}
	seeds := map[string]any{ // by route (Route holds slices: not a map key)
		api.JoinsApprove.String():    api.ApproveRequest{Fingerprint: p.joinKey.Public().Fingerprint(), Name: "n2"},
		api.JobsCreate.String():      api.JobRequest{Node: p.node.ID, Word: "probe", Params: json.RawMessage(`{"n":1}`)},
		api.JobsMarkFailed.String():  api.MarkFailedRequest{Message: "stuck"},
		api.IncidentsTriage.String(): api.TriageRequest{Triage: "snoozed", For: "4h", Reason: "known"},
		api.IncidentsNote.String():   api.NoteRequest{Text: "looking"},
		api.AccountsAdd.String():     api.AccountAdd{Driver: "dns-memory", Name: "acct", Settings: json.RawMessage(`{}`), Credential: "secret"},
		api.DNSReconcile.String():    api.Reconcile{Records: []api.Record{{Type: "A", Name: "www", Value: "192.0.2.1", TTL: 300}}, DryRun: true},
		api.AccountsSetTest.String(): api.AccountTest{Test: true},
		api.CloudCreate.String(): api.CloudCreateRequest{Region: "test-1", Type: "small", Image: "debian-12", Label: "web-1", Tags: []string{"t"},
			UserData: "#cloud-config\n"},
		api.CloudDelete.String():     api.CloudDeleteRequest{Confirm: "web-1"},
		api.CloudSwapIPv4.String():   api.SwapIPv4Request{A: "1", B: "2"},
		api.CloudReverseDNS.String(): api.ReverseDNSRequest{IP: "192.0.2.1", Hostname: "web-1.example.com"},
	}
	var out []adminPost
	for _, rt := range api.Routes() {
		if rt.Method != http.MethodPost {
			continue
		}
		var values []string
		for _, param := range rt.Params() {
			values = append(values, value(rt, param))
		}
		path, err := rt.Path(values...)
		if err != nil {
			tb.Fatal(err)
		}
		seed := []byte{}
		if s, ok := seeds[rt.String()]; ok {
			seed, _ = json.Marshal(s)
		}
		if rt.String() == api.ReleasesPublish.String() {
			seed = p.release
		}
		out = append(out, adminPost{route: rt, path: path, seed: seed})
	}
	return out
}

// FuzzAdminBodies sends arbitrary bodies to every admin POST route as an admin.
func FuzzAdminBodies(f *testing.F) {
	p := newFuzzPlane(f)
	posts := p.adminPosts(f)
	for i, post := range posts {
		f.Add(uint8(i), post.seed)
		f.Add(uint8(i), []byte(`{"unknown":1}`))
	}
	f.Add(uint8(0), []byte(`[`))
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		post := posts[int(route)%len(posts)]
		req := httptest.NewRequest(post.route.Method, "http://plane.test"+api.Prefix+post.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.admin)
		rec := httptest.NewRecorder()
		p.h.ServeHTTP(rec, req)
		p.check(t, post.route.String(), rec, post.route.Status)
	})
}

// channelRoute is an agent route: how it is signed, its success statuses and a valid body.
type channelRoute struct {
	method, path string
	key          keys.NodePrivate // zero: unsigned
	ok           []int
	seed         []byte
}

func (p *fuzzPlane) channelRoutes() []channelRoute {
	marshal := func(v any) []byte { b, _ := json.Marshal(v); return b }
	claim := channel.ClaimRequest{Idle: true, Version: "test", Vocabulary: []channel.Word{{Name: "probe", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}},
		Recipes: []channel.RecipeReport{}, Cases: []channel.CaseReport{{ID: 1, Recipe: "unit_health", State: "open", OpenedAt: time.Now().UTC(), Summary: "down"}}}
	return []channelRoute{
		{http.MethodPost, channel.PathJoin, keys.NodePrivate{}, []int{http.StatusAccepted}, p.joinBody},
		{http.MethodPost, channel.PathJoinStatus, p.joinKey, []int{http.StatusOK}, marshal(channel.JoinStatusRequest{JoinID: p.joinID})},
		{http.MethodPost, channel.PathClaim, p.nodeKey, []int{http.StatusOK}, marshal(claim)},
		{http.MethodPost, channel.PathResult, p.nodeKey, []int{http.StatusOK},
			marshal(channel.ResultRequest{JobID: p.jobID, Outcome: channel.OutcomeCompleted, Output: json.RawMessage(`{"ok":true}`), DurationMS: 5})},
		{http.MethodPost, channel.PathJobStatus, p.nodeKey, []int{http.StatusOK}, marshal(channel.JobStatusRequest{JobID: p.jobID})},
		{http.MethodPost, channel.PathLeave, p.endKey, []int{http.StatusOK}, marshal(channel.LeaveRequest{Reason: "retired"})},
		// The artifact route takes its request in the query; the fuzzed bytes are the query.
		{http.MethodGet, channel.PathArtifact, p.nodeKey, []int{http.StatusOK}, []byte("agent=linux-amd64")},
	}
}

// FuzzChannelBodies sends arbitrary bodies to every agent route, signed by the key the route takes.
func FuzzChannelBodies(f *testing.F) {
	p := newFuzzPlane(f)
	routes := p.channelRoutes()
	for i, rt := range routes {
		f.Add(uint8(i), rt.seed)
		f.Add(uint8(i), []byte(`{"job_id":7,"idle":"yes"}`))
	}
	f.Add(uint8(2), []byte(`{"idle":true,"cases":[{"id":1,"body":{"x":[1,2,3]}}],"claim_size":-1}`))
	for i, rt := range routes {
		switch rt.path {
		case channel.PathClaim: // brief claims, held digest or not
			f.Add(uint8(i), []byte(`{"idle":true,"report_digest":"abc","report_omitted":true}`))
			f.Add(uint8(i), []byte(`{"idle":false,"report_omitted":true,"vocabulary":[{"name":"x"}]}`))
		case channel.PathResult: // finish-and-claim
			f.Add(uint8(i), []byte(`{"job_id":"job_x","outcome":"completed","claim":{"idle":true,"report_digest":"d","report_omitted":true}}`))
			f.Add(uint8(i), []byte(`{"job_id":"job_x","outcome":"refused","claim":{"idle":true,"vocabulary":null,"claim":1}}`))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := routes[int(route)%len(routes)]
		target := "http://plane.test" + rt.path
		var reqBody []byte
		if rt.method == http.MethodGet {
			target += "?" + escapeQuery(body)
		} else {
			reqBody = body
		}
		req := httptest.NewRequest(rt.method, target, bytes.NewReader(reqBody))
		if !rt.key.IsZero() {
			if err := httpsig.Sign(req, reqBody, rt.key, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		rec := httptest.NewRecorder()
		p.h.ServeHTTP(rec, req)
		p.check(t, rt.method+" "+rt.path, rec, rt.ok...)
	})
}

// escapeQuery keeps a query's structure (= and &) and escapes everything a request line cannot hold.
func escapeQuery(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		if c == '=' || c == '&' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	return sb.String()
}
