package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/incidents"
	"github.com/lexicon-fleet/lexicon/plane/internal/server"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/webhook"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// incidentPlane is a server on loopback over a fresh SQLite store, with one enrolled node, a token per role and
// a webhook receiver.
type incidentPlane struct {
	t       *testing.T
	srv     *server.Server
	deliver *webhook.Deliverer
	recon   *incidents.Reconciler
	queued  atomic.Int32 // calls of NotificationsQueued
	http    *httptest.Server
	store   store.Store
	clock   *testkit.Clock
	log     *testkit.Buffer
	key     keys.NodePrivate
	node    store.Node
	tokens  map[store.Role]string
	hookMu  sync.Mutex
	hookGot [][]byte
}

func newIncidentPlane(t *testing.T) *incidentPlane {
	t.Helper()
	p := &incidentPlane{t: t, clock: testkit.NewClock(time.Now().UTC().Truncate(time.Second)), log: &testkit.Buffer{}, tokens: map[store.Role]string{}}
	p.store = storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.hookMu.Lock()
		p.hookGot = append(p.hookGot, b)
		p.hookMu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(hook.Close)
	log := slog.New(slog.NewJSONHandler(p.log, nil))
	p.srv = wire.New(wire.Config{
		Store: p.store, Log: log, Now: p.clock.Now, ClaimWait: 10 * time.Millisecond,
		WebhookNames: []string{"ops"}, NotificationsQueued: func() { p.queued.Add(1) },
	})
	p.deliver = &webhook.Deliverer{Store: p.store, Endpoints: []webhook.Endpoint{{Name: "ops", Format: webhook.FormatJSON, URL: hook.URL}},
		Now: p.clock.Now, Log: log}
	p.recon = incidents.NewReconciler(incidents.Config{Store: p.store, Now: p.clock.Now, Log: log, Webhooks: []string{"ops"}})
	p.http = httptest.NewServer(checked(t, p.srv.Handler()))
	t.Cleanup(p.http.Close)
	ctx := t.Context()
	p.key = keys.NewNode()
	pub := p.key.Public()
	j, err := p.store.JoinCreate(ctx, store.JoinCreateParams{Name: "web-1", Key: pub.String(), Fingerprint: pub.Fingerprint(), SourceAddress: "127.0.0.1", Now: p.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.store.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint(), Now: p.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	p.node = res.Node
	for _, role := range []store.Role{store.RoleViewer, store.RoleOperator} {
		tok, hash := tokens.Mint()
		if _, err := p.store.TokenCreate(ctx, store.TokenCreateParams{Name: string(role) + "-1", Role: role, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		p.tokens[role] = tok
	}
	return p
}

// claim sends a signed claim and fails the test unless the plane answers 200.
func (p *incidentPlane) claim(req channel.ClaimRequest) {
	p.t.Helper()
	if req.Vocabulary == nil {
		req.Vocabulary = []channel.Word{{Name: "host_report", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}}
	}
	body, _ := json.Marshal(req)
	r, _ := http.NewRequest(http.MethodPost, p.http.URL+channel.PathClaim, bytes.NewReader(body))
	if err := httpsig.Sign(r, body, p.key, p.clock.Now()); err != nil {
		p.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		p.t.Fatalf("claim: %s %s", resp.Status, data)
	}
}

// admin calls the admin API with the role's token and decodes the answer into out; it returns the status.
func (p *incidentPlane) admin(role store.Role, method, path string, in, out any) int {
	p.t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	r, _ := http.NewRequest(method, p.http.URL+"/api/v1/admin"+path, body)
	r.Header.Set("Authorization", "Bearer "+p.tokens[role])
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			p.t.Fatalf("%s %s: %s: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

func (p *incidentPlane) hooks() int {
	p.hookMu.Lock()
	defer p.hookMu.Unlock()
	return len(p.hookGot)
}

func openCase(id uint64, recipe string, at time.Time) channel.CaseReport {
	return channel.CaseReport{ID: id, Recipe: recipe, State: channel.CaseOpen, OpenedAt: at, Summary: recipe + " failed four times",
		Body: &channel.CaseBody{Mode: "repair", Attempts: []json.RawMessage{json.RawMessage(`{"n":1}`)}}}
}

type errorBody struct {
	Error struct {
		Code    string         `json:"code"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

func TestClaimTakesInCasesAndNeverFailsOnARefusedOne(t *testing.T) {
	p := newIncidentPlane(t)
	at := p.clock.Now()
	good := openCase(1, "unit_health", at)
	good.Notes = []channel.CaseNote{{Seq: 1, At: at, Text: "still failing"}}
	long := openCase(2, "disk_headroom", at)
	long.Summary = strings.Repeat("é", channel.MaxCaseText) + "\x00"
	p.claim(channel.ClaimRequest{Idle: true, Version: "1.0.0", Recipes: []channel.RecipeReport{{Name: "unit_health", Detail: "a\x00b"}},
		Cases: []channel.CaseReport{good, long, {ID: 0, Recipe: "bad"}, {ID: 9, Recipe: "Not A Name", State: channel.CaseOpen, OpenedAt: at}}})
	ctx := t.Context()
	// The node's report stands, NUL and all made storable.
	n, err := p.store.NodeGet(ctx, store.NodeGetParams{ID: p.node.ID})
	if err != nil || len(n.Vocabulary) != 1 || !strings.Contains(string(n.Recipes), "a\uFFFDb") {
		t.Fatalf("node %+v, %v", n, err)
	}
	c, err := p.store.CaseGet(ctx, store.CaseGetParams{NodeID: p.node.ID, ID: 1})
	if err != nil || c.State != store.CaseOpen || len(c.Notes) != 1 || c.Body == nil {
		t.Fatalf("case 1: %+v, %v", c, err)
	}
	c, err = p.store.CaseGet(ctx, store.CaseGetParams{NodeID: p.node.ID, ID: 2})
	if err != nil || len(c.Summary) > channel.MaxCaseText || !strings.HasSuffix(c.Summary, "…[cut]") {
		t.Fatalf("case 2: %q, %v", c.Summary, err)
	}
	_, err = p.store.CaseGet(ctx, store.CaseGetParams{NodeID: p.node.ID, ID: 9})
	if !errcode.Has(err, errcode.CaseNotFound) {
		t.Fatalf("case 9: %v", err)
	}
	logged := p.log.String()
	for _, want := range []string{`"code":"case.invalid","case":0`, `"code":"case.invalid","case":9`, `"field":"recipe"`,
		`"code":"case.capped","case":2`, `"fields":["summary"]`, "is not a module name"} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %s:\n%s", want, logged)
		}
	}
	// Both cases opened incidents; each notified the webhook once.
	var list struct{ Incidents []store.Incident }
	if code := p.admin(store.RoleViewer, http.MethodGet, "/incidents?needs_you=true&node=web-1", nil, &list); code != http.StatusOK || len(list.Incidents) != 2 {
		t.Fatalf("list: %d %+v", code, list)
	}
	// The claim that queued them woke this process's deliverer rather than leaving them for its tick.
	if n := p.queued.Load(); n != 1 {
		t.Fatalf("the claim that queued notifications called NotificationsQueued %d times, want 1", n)
	}
	if n, err := p.deliver.DeliverDue(ctx); err != nil || n != 2 || p.hooks() != 2 {
		t.Fatalf("delivered %d (%v), webhook got %d", n, err, p.hooks())
	}
	// The same claim again (the agent did not hear the answer) changes nothing and sends nothing.
	p.claim(channel.ClaimRequest{Idle: true, Version: "1.0.0", Cases: []channel.CaseReport{good, long}})
	if n, _ := p.deliver.DeliverDue(ctx); n != 0 {
		t.Fatalf("a repeated claim sent %d notifications", n)
	}
	// A claim reopening a closed id is refused and logged; the claim itself goes through.
	closed := good
	closed.State, closed.ClosedAt, closed.Notes, closed.Body = channel.CaseClosed, at.Add(time.Minute), nil, nil
	p.claim(channel.ClaimRequest{Idle: true, Version: "1.0.0", Cases: []channel.CaseReport{closed}})
	p.claim(channel.ClaimRequest{Idle: true, Version: "1.0.0", Cases: []channel.CaseReport{good}})
	if !strings.Contains(p.log.String(), `"code":"case.closed"`) {
		t.Fatalf("log lacks case.closed:\n%s", p.log.String())
	}
}

func TestIncidentAdminAPI(t *testing.T) {
	p := newIncidentPlane(t)
	at := p.clock.Now()
	p.claim(channel.ClaimRequest{Idle: true, Version: "1.0.0", Cases: []channel.CaseReport{openCase(1, "unit_health", at)}})
	var list struct{ Incidents []store.Incident }
	p.admin(store.RoleViewer, http.MethodGet, "/incidents", nil, &list)
	if len(list.Incidents) != 1 {
		t.Fatalf("incidents %+v", list)
	}
	id := list.Incidents[0].ID

	// A viewer reads, but neither triages nor notes.
	var e errorBody
	if code := p.admin(store.RoleViewer, http.MethodPost, "/incidents/"+id+"/triage", api.TriageRequest{Triage: "resolved"}, &e); code != http.StatusForbidden || e.Error.Code != errcode.AuthForbidden {
		t.Fatalf("viewer triage: %d %+v", code, e)
	}
	if code := p.admin(store.RoleViewer, http.MethodPost, "/incidents/"+id+"/notes", api.NoteRequest{Text: "x"}, &e); code != http.StatusForbidden {
		t.Fatalf("viewer note: %d", code)
	}
	// An operator snoozes it for a day.
	var ch store.IncidentChange
	if code := p.admin(store.RoleOperator, http.MethodPost, "/incidents/"+id+"/triage", api.TriageRequest{Triage: "snoozed", For: "1d", Reason: "after the deploy"}, &ch); code != http.StatusOK {
		t.Fatalf("snooze: %d", code)
	}
	if ch.Incident.Triage != store.TriageSnoozed || !ch.Incident.SnoozedUntil.Equal(at.Add(24*time.Hour)) || ch.Event.Actor != "operator-1" || ch.Incident.NeedsYou {
		t.Fatalf("snoozed %+v", ch)
	}
	p.admin(store.RoleViewer, http.MethodGet, "/incidents?needs_you=true", nil, &list)
	if len(list.Incidents) != 0 {
		t.Fatalf("a snoozed incident needs you: %+v", list)
	}
	p.clock.Advance(24 * time.Hour)
	p.admin(store.RoleViewer, http.MethodGet, "/incidents?needs_you=true", nil, &list)
	if len(list.Incidents) != 1 {
		t.Fatal("a snooze that ran out does not need you")
	}
	for _, bad := range []api.TriageRequest{{Triage: "snoozed", For: "2h"}, {Triage: "snoozed"}, {Triage: "fixed"}, {Triage: "resolved", For: "4h"}} {
		if code := p.admin(store.RoleOperator, http.MethodPost, "/incidents/"+id+"/triage", bad, &e); code != http.StatusBadRequest || e.Error.Code != errcode.RequestMalformed {
			t.Fatalf("triage %+v: %d %+v", bad, code, e)
		}
	}
	var ev store.IncidentEvent
	if code := p.admin(store.RoleOperator, http.MethodPost, "/incidents/"+id+"/notes", api.NoteRequest{Text: "restarted nginx by hand"}, &ev); code != http.StatusCreated || ev.Kind != store.EventNote {
		t.Fatalf("note: %d %+v", code, ev)
	}
	var d api.IncidentDetail
	if code := p.admin(store.RoleViewer, http.MethodGet, "/incidents/"+id, nil, &d); code != http.StatusOK {
		t.Fatalf("show: %d", code)
	}
	if len(d.Events) != 3 || d.Events[1].Kind != api.EventTriage || d.Events[2].Text != "restarted nginx by hand" ||
		d.Case == nil || d.Case.ID != 1 || d.Case.Body == nil || len(d.Notifications) != 1 {
		t.Fatalf("detail %+v", d)
	}
	if code := p.admin(store.RoleViewer, http.MethodGet, "/incidents/inc_missing", nil, &e); code != http.StatusNotFound || e.Error.Code != errcode.IncidentNotFound {
		t.Fatalf("missing: %d %+v", code, e)
	}
	if code := p.admin(store.RoleViewer, http.MethodGet, "/incidents?node=nobody", nil, &e); code != http.StatusNotFound {
		t.Fatalf("unknown node: %d", code)
	}
	if code := p.admin(store.RoleViewer, http.MethodGet, "/incidents?needs_you=maybe", nil, &e); code != http.StatusBadRequest {
		t.Fatalf("needs_you=maybe: %d", code)
	}
}

func TestUntrustedReportOpensAnIncident(t *testing.T) {
	p := newIncidentPlane(t)
	p.claim(channel.ClaimRequest{Idle: true, Version: "1.0.0", Untrusted: "statement.signature_invalid: no held key signed it"})
	p.recon.Reconcile(t.Context())
	var list struct{ Incidents []store.Incident }
	p.admin(store.RoleViewer, http.MethodGet, "/incidents", nil, &list)
	if len(list.Incidents) != 1 || list.Incidents[0].Source != store.DetectorUntrustedRelease || list.Incidents[0].Severity != store.SeverityCritical {
		t.Fatalf("incidents %+v", list)
	}
	p.claim(channel.ClaimRequest{Idle: true, Version: "1.0.0"})
	p.recon.Reconcile(t.Context())
	p.admin(store.RoleViewer, http.MethodGet, "/incidents", nil, &list)
	if list.Incidents[0].Condition != store.ConditionCleared {
		t.Fatalf("incident %+v", list.Incidents[0])
	}
}
