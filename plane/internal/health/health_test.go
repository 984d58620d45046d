package health_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/internal/health"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func write(t *testing.T, root, path, text string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryLimit: the process's cgroup v2 memory.max when set, the machine's MemTotal when it is "max"
// or absent, and the smaller of the two when both are known.
func TestMemoryLimit(t *testing.T) {
	const meminfo = "MemTotal:        4000000 kB\nMemFree:          100000 kB\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"cgroup limit", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/plane.slice\n",
			"sys/fs/cgroup/plane.slice/memory.max": "536870912\n"}, 512 << 20},
		{"cgroup max", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/plane.slice\n",
			"sys/fs/cgroup/plane.slice/memory.max": "max\n"}, 4000000 << 10},
		{"cgroup above the machine", map[string]string{"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "99999999999999\n"}, 4000000 << 10},
		{"no cgroup", map[string]string{"proc/meminfo": meminfo}, 4000000 << 10},
		{"nothing", map[string]string{}, 0},
		{"garbage", map[string]string{"proc/meminfo": "MemTotal: lots\n", "sys/fs/cgroup/memory.max": "-5\n"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, text := range tc.files {
				write(t, root, p, text)
			}
			if got := health.MemoryLimit(root); got != tc.want {
				t.Fatalf("MemoryLimit = %d, want %d", got, tc.want)
			}
		})
	}
	if m := health.SampleMemory(); m.Heap <= 0 || m.RSS <= 0 {
		t.Fatalf("sample of this process: %+v", m)
	}
}

// TestMemoryAlertRaisedAndCleared: this process's real memory, against a limit injected through a
// cgroup file, passes a very low alert share: plane:memory names the replica; with the alert share
// raised it clears, and the peak stays.
func TestMemoryAlertRaisedAndCleared(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	root := t.TempDir()
	write(t, root, "sys/fs/cgroup/memory.max", "67108864\n") // 64 MiB
	limit := health.MemoryLimit(root)
	clock := testkit.NewClock(time.Now().UTC())
	beat := func(alert float64) {
		t.Helper()
		health.NewHeartbeat(health.Config{Store: st, ID: "plane-a", MemoryLimit: limit, MemoryAlert: alert, Now: clock.Now}).Beat(t.Context())
	}
	reconcile := func() []store.IncidentChange {
		t.Helper()
		res, err := st.IncidentReconcile(t.Context(), store.IncidentReconcileParams{Now: clock.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return res.Changes
	}
	beat(0.001) // 64 KiB: any Go process is above it
	ch := reconcile()
	if len(ch) != 1 || ch[0].Incident.Source != store.DetectorMemory || ch[0].Incident.Subject != "plane-a" ||
		!strings.Contains(ch[0].Incident.Summary, "64.0 MiB limit") {
		t.Fatalf("changes %+v", ch)
	}
	clock.Advance(10 * time.Second)
	beat(1) // all of the limit: this test process does not hold 64 MiB resident
	ch = reconcile()
	if len(ch) == 0 || ch[0].Incident.Subject != "plane-a" || ch[0].Event.Kind != store.EventCleared {
		t.Fatalf("changes after raising the share %+v", ch)
	}
	reps, err := st.ReplicaList(t.Context(), store.ReplicaListParams{Now: clock.Now()})
	if err != nil || len(reps) != 1 || reps[0].PeakRSSBytes <= 0 || reps[0].MemoryLimitBytes != 64<<20 {
		t.Fatalf("replicas %+v %v", reps, err)
	}
}

// TestRouteCountsByPattern: answers are counted under the method and chi pattern that matched, 5xx
// with their statuses, unmatched paths under one name; a snapshot keeps the last minutes only.
func TestRouteCountsByPattern(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC))
	rc := health.NewRouteCounts(clock.Now)
	r := chi.NewRouter()
	r.Use(rc.Count)
	r.Get("/things/{id}", func(w http.ResponseWriter, r *http.Request) {
		if chi.URLParam(r, "id") == "bad" {
			http.Error(w, "broken", http.StatusBadGateway)
			return
		}
		_, _ = w.Write([]byte("ok")) // an implicit 200
	})
	r.Route("/api", func(r chi.Router) {
		r.Post("/x/{name}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	})
	for _, req := range []struct{ method, path string }{
		{"GET", "/things/a"}, {"GET", "/things/b"}, {"GET", "/things/bad"}, {"POST", "/api/x/y"}, {"GET", "/nowhere/1"}, {"GET", "/nowhere/2"},
	} {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(req.method, req.path, nil))
	}
	got := map[string]store.RouteCount{}
	for _, c := range rc.Snapshot() {
		got[c.Route] = c
	}
	if c := got["GET /things/{id}"]; c.Requests != 3 || c.Failures != 1 || c.Codes[502] != 1 || !c.Minute.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("things: %+v", c)
	}
	if c := got["POST /api/x/{name}"]; c.Requests != 1 || c.Codes[500] != 1 {
		t.Fatalf("api: %+v", c)
	}
	if c := got["unmatched"]; c.Requests != 2 || c.Failures != 0 || len(got) != 3 {
		t.Fatalf("unmatched: %+v (all %v)", c, got)
	}
	clock.Advance(11 * time.Minute)
	if s := rc.Snapshot(); len(s) != 0 {
		t.Fatalf("old minutes kept: %+v", s)
	}
}

// TestReplicaStoppedIsMissingAndTheOtherCarriesOn: two replicas heartbeat into one PostgreSQL store
// (as two plane processes do) through their services, driven by ticks; one stops, and once its lease
// has run out on the clock the other's reconciler raises plane:replica_missing naming it; it comes
// back and the incident clears.
func TestReplicaStoppedIsMissingAndTheOtherCarriesOn(t *testing.T) {
	env := storetest.PostgresOpener(t)
	clock := testkit.NewClock(time.Now().UTC())
	start := func(st store.Store, id string) (*health.Heartbeat, chan time.Time) {
		ticks := make(chan time.Time)
		hb := health.NewHeartbeat(health.Config{Store: st, ID: id, Version: "test", Address: id + ":8443", Every: 10 * time.Second,
			Services: []string{"incident reconciler"}, Now: clock.Now,
			NewTicker: func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }})
		if err := hb.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hb.Stop(t.Context()) })
		return hb, ticks
	}
	_, ticksA := start(env.Store, "plane-a")
	b, ticksB := start(env.Peer(t), "plane-b")
	// A tick is taken only once the step before it (the beat at start) has finished.
	ticksA <- clock.Now()
	ticksB <- clock.Now()
	reconcile := func() []store.IncidentChange {
		t.Helper()
		res, err := env.Store.IncidentReconcile(t.Context(), store.IncidentReconcileParams{Now: clock.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return res.Changes
	}
	if ch := reconcile(); len(ch) != 0 {
		t.Fatalf("both alive: %+v", ch)
	}
	if err := b.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute) // past plane-b's lease of six heartbeats
	ticksA <- clock.Now()
	ticksA <- clock.Now() // the first tick's beat has finished
	ch := reconcile()
	if len(ch) != 1 || ch[0].Incident.Source != store.DetectorReplicaMissing || ch[0].Incident.Subject != "plane-b" {
		t.Fatalf("changes %+v", ch)
	}
	// plane-b starts again under its id: the incident clears.
	_, ticksB = start(env.Peer(t), "plane-b")
	ticksB <- clock.Now()
	ch = reconcile()
	if len(ch) == 0 || ch[0].Incident.Subject != "plane-b" || ch[0].Event.Kind != store.EventCleared {
		t.Fatalf("changes after restart %+v", ch)
	}
}
