package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/health"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// planeOn is a plane on st with a token of every role.
func planeOn(t *testing.T, cfg wire.Config, st store.Store) *trustedPlane {
	t.Helper()
	p := &trustedPlane{plane: newPlaneOn(t, cfg, st), tokens: map[store.Role]string{}}
	for _, role := range []store.Role{store.RoleViewer, store.RoleOperator, store.RoleAdmin} {
		tok, hash := tokens.Mint()
		if _, err := st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "tok-" + string(role), Role: role, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		p.tokens[role] = tok
	}
	return p
}

// get fetches a path outside the admin API and returns its status and error code.
func get(t *testing.T, url string) (int, string, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env errcode.Envelope
	_ = json.Unmarshal(b, &env)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, env.Error.Code, m
}

// TestReadyz: /readyz answers 200 only when the store answers, its migrations are this binary's and a
// master key is loaded, and names the failing check otherwise; /healthz stays liveness.
func TestReadyz(t *testing.T) {
	ready := newPlane(t, wire.Config{ReplicaID: "plane-a", MasterKeyID: "0123456789abcdef"})
	if status, code, body := get(t, ready.url+"/readyz"); status != http.StatusOK || code != "" || body["ready"] != true || body["replica"] != "plane-a" {
		t.Fatalf("ready replica: %d %s %v", status, code, body)
	}
	noKey := newPlane(t, wire.Config{ReplicaID: "plane-b"})
	status, code, body := get(t, noKey.url+"/readyz")
	if status != http.StatusServiceUnavailable || code != errcode.ReplicaNotReady || !strings.Contains(body["error"].(map[string]any)["details"].(map[string]any)["reason"].(string), "master_key") {
		t.Fatalf("replica without a master key: %d %s %v", status, code, body)
	}
	if status, _, _ := get(t, noKey.url+"/healthz"); status != http.StatusOK {
		t.Fatalf("healthz of a live replica that is not ready: %d", status)
	}
	// The store goes away: not ready, naming the store.
	_ = ready.st.Close()
	status, code, body = get(t, ready.url+"/readyz")
	if status != http.StatusServiceUnavailable || code != errcode.ReplicaNotReady || body["error"].(map[string]any)["details"].(map[string]any)["reason"] != "store" {
		t.Fatalf("replica without its store: %d %s %v", status, code, body)
	}
}

// failingStore fails incident lists while fail is set, as a database would under a broken query.
type failingStore struct {
	store.Store
	fail atomic.Bool
}

func (f *failingStore) IncidentList(ctx context.Context, p store.IncidentListParams) (store.IncidentListResult, error) {
	if f.fail.Load() {
		return store.IncidentListResult{}, errcode.New(errcode.StoreUnavailable, "the database went away (test)")
	}
	return f.Store.IncidentList(ctx, p)
}

// TestRouteFailingRaisedAndCleared: a route answering 5xx to most requests is counted by the server's
// middleware under its pattern, heartbeat into the store, and raised as plane:route_failing naming the
// route and the status; once it answers again, the incident clears.
func TestRouteFailingRaisedAndCleared(t *testing.T) {
	st := &failingStore{Store: storetest.SQLiteOpener(t).Store}
	clock := testkit.NewClock(time.Now().UTC())
	routes := health.NewRouteCounts(clock.Now)
	p := planeOn(t, wire.Config{RouteCounts: routes}, st)
	hb := health.NewHeartbeat(health.Config{Store: st.Store, ID: "plane-a", Routes: routes, Now: clock.Now, MemoryLimit: 1 << 30,
		Sample: func() health.Memory { return health.Memory{Heap: 1, RSS: 1} }})
	reconcile := func() []store.IncidentChange {
		t.Helper()
		hb.Beat(t.Context())
		res, err := st.IncidentReconcile(t.Context(), store.IncidentReconcileParams{Now: clock.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return res.Changes
	}
	const route = "GET /api/v1/admin/incidents"
	st.fail.Store(true)
	for range 25 {
		p.want(http.StatusServiceUnavailable, errcode.StoreUnavailable, store.RoleViewer, http.MethodGet, "/incidents", nil, nil)
	}
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/nodes/"+p.node.ID, nil, nil) // counted under its pattern
	ch := reconcile()
	if len(ch) != 1 || ch[0].Incident.Source != store.DetectorRouteFailing || ch[0].Incident.Subject != route ||
		!strings.Contains(ch[0].Incident.Summary, "503×25") || ch[0].Incident.NodeID != "" {
		t.Fatalf("changes %+v", ch)
	}
	snap := routes.Snapshot()
	found := false
	for _, r := range snap {
		found = found || r.Route == "GET /api/v1/admin/nodes/{id}"
	}
	if !found {
		t.Fatalf("route counts %+v lack the pattern of /nodes/{id}", snap)
	}

	// The route answers again: successes bring its share under the threshold and the incident clears.
	st.fail.Store(false)
	clock.Advance(time.Minute)
	for range 30 {
		p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/incidents", nil, nil)
	}
	ch = reconcile()
	if len(ch) == 0 || ch[0].Incident.Subject != route || ch[0].Event.Kind != store.EventCleared {
		t.Fatalf("changes after recovery %+v", ch)
	}
}

// TestPlaneStatusAndForgetReplica: viewers read the replicas; only an admin forgets one, and only one
// that stopped heartbeating.
func TestPlaneStatusAndForgetReplica(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	p := planeOn(t, wire.Config{ReplicaID: "plane-a"}, st)
	now := time.Now().UTC()
	for id, at := range map[string]time.Time{"plane-a": now, "plane-b": now.Add(-10 * time.Minute)} {
		if _, err := st.ReplicaHeartbeat(t.Context(), store.ReplicaHeartbeatParams{ID: id, Version: "v1", Address: id + ":8443",
			StartedAt: at, Lease: time.Minute, Services: []string{"sweep"}, RSSBytes: 100, Now: at}); err != nil {
			t.Fatal(err)
		}
	}
	var ps api.PlaneStatus
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/plane/status", nil, &ps)
	if ps.Answered != "plane-a" || len(ps.Replicas) != 2 || ps.Replicas[0].Missing || !ps.Replicas[1].Missing ||
		ps.Replicas[1].PeakRSSBytes != 100 || ps.Replicas[0].Services[0] != "sweep" || ps.Replicas[0].LeaseSeconds != 60 {
		t.Fatalf("status %+v", ps)
	}
	p.want(http.StatusForbidden, errcode.AuthForbidden, store.RoleOperator, http.MethodPost, "/plane/replicas/plane-b/forget", nil, nil)
	p.want(http.StatusConflict, errcode.ReplicaAlive, store.RoleAdmin, http.MethodPost, "/plane/replicas/plane-a/forget", nil, nil)
	p.want(http.StatusNotFound, errcode.ReplicaNotFound, store.RoleAdmin, http.MethodPost, "/plane/replicas/plane-z/forget", nil, nil)
	var gone api.Replica
	p.want(http.StatusOK, "", store.RoleAdmin, http.MethodPost, "/plane/replicas/plane-b/forget", nil, &gone)
	if gone.ID != "plane-b" {
		t.Fatalf("forgot %+v", gone)
	}
	p.want(http.StatusOK, "", store.RoleViewer, http.MethodGet, "/plane/status", nil, &ps)
	if len(ps.Replicas) != 1 {
		t.Fatalf("after forgetting: %+v", ps)
	}
}
