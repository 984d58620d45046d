package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// auditPlane is a plane whose audit trail is also exported to a file, with an admin token.
type auditPlane struct {
	st    store.Store
	url   string
	admin string
	file  string
}

func newAuditPlane(t *testing.T) *auditPlane {
	t.Helper()
	st := storetest.SQLiteOpener(t).Store
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	x, err := audit.OpenFile(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Close() })
	ts := httptest.NewServer(checked(t, wire.New(wire.Config{Store: st,
		AuditExporters: []audit.Exporter{x}}).Handler()))
	t.Cleanup(ts.Close)
	tok, hash := tokens.Mint()
	if _, err := st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "root", Role: store.RoleAdmin, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	return &auditPlane{st: st, url: ts.URL, admin: tok, file: file}
}

func (p *auditPlane) do(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, p.url+api.Prefix+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&buf)
	return resp.StatusCode, []byte(buf.String())
}

func (p *auditPlane) events(t *testing.T, lp store.AuditEventListParams) []store.AuditEvent {
	t.Helper()
	lp.Limit = store.MaxListLimit
	res, err := p.st.AuditEventList(t.Context(), lp)
	if err != nil {
		t.Fatal(err)
	}
	return res.Events
}

// TestEveryChangeIsAudited walks the route table: every route that changes the plane writes exactly
// one audit event, named by its operation id, with the token, the address, the route's target and
// the status and code it answered; no read writes one. A route added to the table is held to this
// without a line here.
func TestEveryChangeIsAudited(t *testing.T) {
	p := newAuditPlane(t)
	mutating := 0
	for _, rt := range api.Routes() {
		params := make([]string, len(rt.Params()))
		for i := range params {
			params[i] = "x" + string(rune('a'+i))
		}
		path, err := rt.Path(params...)
		if err != nil {
			t.Fatal(err)
		}
		before := len(p.events(t, store.AuditEventListParams{}))
		status, body := p.do(t, rt.Method, path, "{}")
		after := p.events(t, store.AuditEventListParams{})
		if !rt.Mutating() {
			if len(after) != before {
				t.Errorf("%s is a read and wrote an audit event: %+v", rt, after[0])
			}
			continue
		}
		mutating++
		if len(after) != before+1 {
			t.Errorf("%s wrote %d audit events, want 1", rt, len(after)-before)
			continue
		}
		e := after[0]
		var env struct{ Error errcode.Error }
		_ = json.Unmarshal(body, &env)
		wantCode := store.CodeOK
		if status >= 400 {
			wantCode = env.Error.Code
		}
		if e.Operation != rt.OperationID() || e.Operation == rt.String() || e.Via != store.AuditViaAPI || e.Actor != "root" ||
			e.ActorID == "" || e.Address != "127.0.0.1" || e.Target != strings.Join(params, "/") || e.Status != status ||
			e.Code != wantCode {
			t.Errorf("%s answered %d %s; its event is %+v", rt, status, env.Error.Code, e)
		}
	}
	if mutating < 30 {
		t.Fatalf("only %d mutating routes were walked", mutating)
	}
}

// TestAuditKeepsNoSecret: minting a token over the API records who made which token, and neither the
// trail in the store nor its export holds the token's secret; the export has the intent and the
// outcome, one JSON line each.
func TestAuditKeepsNoSecret(t *testing.T) {
	p := newAuditPlane(t)
	status, body := p.do(t, http.MethodPost, "/tokens", `{"name":"ci","role":"operator"}`)
	if status != http.StatusCreated {
		t.Fatalf("mint: %d %s", status, body)
	}
	var made api.NewToken
	if err := json.Unmarshal(body, &made); err != nil || made.Secret == "" {
		t.Fatalf("mint answered %s", body)
	}
	evs := p.events(t, store.AuditEventListParams{Operation: api.TokensCreate.OperationID()})
	if len(evs) != 1 || evs[0].Target != made.Token.ID || evs[0].Code != store.CodeOK || evs[0].Status != http.StatusCreated {
		t.Fatalf("mint's event %+v, token %s", evs, made.Token.ID)
	}
	listed, page := p.do(t, http.MethodGet, "/audit?operation=TokensCreate", "")
	if listed != http.StatusOK || !strings.Contains(string(page), made.Token.ID) {
		t.Fatalf("GET /audit: %d %s", listed, page)
	}
	exported, err := os.ReadFile(p.file)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"store": string(page), "export": string(exported)} {
		if strings.Contains(text, made.Secret) || strings.Contains(text, p.admin) {
			t.Errorf("the %s of the audit trail holds a secret:\n%s", name, text)
		}
	}
	var lines []api.AuditEvent
	for _, l := range strings.Split(strings.TrimSpace(string(exported)), "\n") {
		var e api.AuditEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("export line %q: %v", l, err)
		}
		lines = append(lines, e)
	}
	if len(lines) != 2 || lines[0].ID != lines[1].ID || lines[0].Code != store.CodePending || lines[1].Code != store.CodeOK ||
		lines[1].Target != made.Token.ID {
		t.Fatalf("export %+v", lines)
	}
}

// TestAuditFilters: GET /audit filters by actor, operation, outcome and time, and refuses a malformed
// time with request.malformed.
func TestAuditFilters(t *testing.T) {
	p := newAuditPlane(t)
	p.do(t, http.MethodPost, "/tokens", `{"name":"ci","role":"operator"}`)
	p.do(t, http.MethodPost, "/jobs/nope/cancel", "")
	get := func(q api.AuditListQuery) api.AuditEventList {
		t.Helper()
		status, body := p.do(t, http.MethodGet, "/audit?"+q.Values().Encode(), "")
		var l api.AuditEventList
		if status != http.StatusOK || json.Unmarshal(body, &l) != nil {
			t.Fatalf("GET /audit?%s: %d %s", q.Values().Encode(), status, body)
		}
		return l
	}
	if l := get(api.AuditListQuery{Outcome: "failed"}); len(l.Events) != 1 || l.Events[0].Code != errcode.JobNotFound ||
		l.Events[0].Target != "nope" {
		t.Fatalf("failed: %+v", l)
	}
	if l := get(api.AuditListQuery{Actor: "root", Operation: "TokensCreate", Outcome: "ok"}); len(l.Events) != 1 {
		t.Fatalf("by actor, operation, outcome: %+v", l)
	}
	if l := get(api.AuditListQuery{Since: "2999-01-01T00:00:00Z"}); len(l.Events) != 0 {
		t.Fatalf("since the future: %+v", l)
	}
	if l := get(api.AuditListQuery{Limit: 1}); len(l.Events) != 1 || l.NextCursor == "" {
		t.Fatalf("a page: %+v", l)
	}
	status, body := p.do(t, http.MethodGet, "/audit?since=yesterday", "")
	if status != http.StatusBadRequest || !strings.Contains(string(body), errcode.RequestMalformed) {
		t.Fatalf("a malformed time: %d %s", status, body)
	}
}
