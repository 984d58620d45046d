package webhook_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/webhook"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// receiver is a webhook on loopback that records what it is sent and answers with the status the test
// chooses for each request.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	status func(n int) int // the status of the nth request (1-based)
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	t.Helper()
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		if req.Header.Get("Content-Type") != "application/json" || req.Method != http.MethodPost {
			t.Errorf("got %s with content type %q", req.Method, req.Header.Get("Content-Type"))
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		n := len(r.bodies)
		r.mu.Unlock()
		w.WriteHeader(r.status(n))
		_, _ = w.Write([]byte(`{"status":"answer"}`))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

func always(code int) func(int) int { return func(int) int { return code } }

type fixture struct {
	t     *testing.T
	s     store.Store
	clock *testkit.Clock
	node  store.Node
}

func newFixture(t *testing.T, s store.Store) *fixture {
	t.Helper()
	f := &fixture{t: t, s: s, clock: testkit.NewClock(time.Now().UTC().Truncate(time.Second))}
	ctx := t.Context()
	pub := keys.NewNode().Public()
	j, err := s.JoinCreate(ctx, store.JoinCreateParams{Name: "web-1", Key: pub.String(), Fingerprint: pub.Fingerprint(), SourceAddress: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	f.node = res.Node
	return f
}

// open opens (or reopens) the incident of recipe unit_health with case id, notifying hooks.
func (f *fixture) open(id int64, hooks ...string) store.Incident {
	f.t.Helper()
	c := store.CaseReport{ID: id, Recipe: "unit_health", State: store.CaseOpen, OpenedAt: f.clock.Now(), Summary: "nginx.service is failed"}
	res, err := f.s.CaseIntake(f.t.Context(), store.CaseIntakeParams{NodeID: f.node.ID, Cases: []store.CaseReport{c}, Now: f.clock.Now(), Notify: hooks})
	if err != nil || len(res.Changes) == 0 {
		f.t.Fatalf("CaseIntake: %v, %+v", err, res)
	}
	return res.Changes[len(res.Changes)-1].Incident
}

func (f *fixture) close(id int64) {
	f.t.Helper()
	c := store.CaseReport{ID: id, Recipe: "unit_health", State: store.CaseClosed, OpenedAt: f.clock.Now(), ClosedAt: f.clock.Now(), Summary: "ok"}
	if _, err := f.s.CaseIntake(f.t.Context(), store.CaseIntakeParams{NodeID: f.node.ID, Cases: []store.CaseReport{c}, Now: f.clock.Now()}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) deliverer(es ...webhook.Endpoint) *webhook.Deliverer {
	return &webhook.Deliverer{Store: f.s, Endpoints: es, Now: f.clock.Now}
}

func (f *fixture) deliver(d *webhook.Deliverer, want int) {
	f.t.Helper()
	n, err := d.DeliverDue(f.t.Context())
	if err != nil {
		f.t.Fatalf("DeliverDue: %v", err)
	}
	if n != want {
		f.t.Fatalf("DeliverDue attempted %d, want %d", n, want)
	}
}

func (f *fixture) notifications(id string) []store.Notification {
	f.t.Helper()
	list, err := f.s.NotificationList(f.t.Context(), store.NotificationListParams{IncidentID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	return list
}

func sqliteStore(t *testing.T) store.Store {
	return storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
}

func TestOneNotificationPerOpenReopenAndClear(t *testing.T) {
	f := newFixture(t, sqliteStore(t))
	pd := newReceiver(t, always(http.StatusAccepted))
	plain := newReceiver(t, always(http.StatusOK))
	d := f.deliverer(
		webhook.Endpoint{Name: "pd", Format: webhook.FormatPagerDuty, URL: pd.URL + "/v2/enqueue", RoutingKey: "R0UTING"},
		webhook.Endpoint{Name: "ops", Format: webhook.FormatJSON, URL: plain.URL + "/hook"},
	)
	inc := f.open(1, "pd", "ops")
	f.deliver(d, 2)
	// However often it looks, and however long after, nothing more is sent.
	for range 3 {
		f.clock.Advance(time.Hour)
		f.deliver(d, 0)
	}
	if len(pd.got()) != 1 || len(plain.got()) != 1 {
		t.Fatalf("pagerduty got %d, json got %d; want 1 each", len(pd.got()), len(plain.got()))
	}
	var ev webhook.PagerDutyEvent
	if err := json.Unmarshal(pd.got()[0], &ev); err != nil {
		t.Fatal(err)
	}
	if ev.RoutingKey != "R0UTING" || ev.EventAction != "trigger" || ev.DedupKey != inc.ID || ev.Payload.Severity != "warning" ||
		ev.Payload.Source != "web-1" || !strings.Contains(ev.Payload.Summary, "nginx.service is failed") ||
		ev.Payload.CustomDetails.Event != "opened" || ev.Payload.CustomDetails.CaseID != 1 || ev.Payload.Timestamp.IsZero() {
		t.Fatalf("pagerduty event %s", pd.got()[0])
	}
	var msg webhook.Message
	if err := json.Unmarshal(plain.got()[0], &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "incident.opened" || msg.Incident.ID != inc.ID || msg.EventSeq != 1 || msg.NotificationID == "" {
		t.Fatalf("json message %s", plain.got()[0])
	}
	for _, n := range f.notifications(inc.ID) {
		if n.State != store.NotificationDelivered || len(n.History) != 1 || n.History[0].Status < 200 || n.History[0].Status > 299 {
			t.Fatalf("notification %+v", n)
		}
	}

	// It clears (one more each), comes back within the hour (one more each), clears again (one more each).
	f.close(1)
	f.deliver(d, 2)
	f.clock.Advance(10 * time.Minute)
	if got := f.open(2, "pd", "ops"); got.ID != inc.ID {
		t.Fatalf("reopened as %s, want %s", got.ID, inc.ID)
	}
	f.deliver(d, 2)
	f.close(2)
	f.deliver(d, 2)
	f.clock.Advance(time.Hour)
	f.deliver(d, 0)
	if len(pd.got()) != 4 || len(plain.got()) != 4 {
		t.Fatalf("pagerduty got %d, json got %d; want 4 each", len(pd.got()), len(plain.got()))
	}
	if err := json.Unmarshal(pd.got()[2], &ev); err != nil {
		t.Fatal(err)
	}
	if ev.DedupKey != inc.ID || ev.Payload.CustomDetails.Event != "reopened" || !strings.HasPrefix(ev.Payload.Summary, "(reopened)") {
		t.Fatalf("reopen event %s", pd.got()[2])
	}
	for i, want := range []string{"incident.opened", "incident.cleared", "incident.reopened", "incident.cleared"} {
		if err := json.Unmarshal(plain.got()[i], &msg); err != nil || msg.Type != want || msg.Incident.ID != inc.ID {
			t.Fatalf("json message %d is %s, want %s", i, plain.got()[i], want)
		}
	}
}

// pdActions returns the event_action and dedup_key of each PagerDuty event r received, and fails on a
// resolve that carries a payload.
func pdActions(t *testing.T, r *receiver) (actions, keys []string) {
	t.Helper()
	for _, b := range r.got() {
		var ev webhook.PagerDutyEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.EventAction == "resolve" && (ev.Payload != nil || ev.RoutingKey != "R0UTING") {
			t.Fatalf("resolve event %s", b)
		}
		actions, keys = append(actions, ev.EventAction), append(keys, ev.DedupKey)
	}
	return actions, keys
}

// TestPagerDutyResolvesWhatItTriggered: an incident that clears resolves the PagerDuty alert its opening
// triggered, under the same dedup key, and a webhook never told of an incident is not told it cleared.
func TestPagerDutyResolvesWhatItTriggered(t *testing.T) {
	f := newFixture(t, sqliteStore(t))
	pd := newReceiver(t, always(http.StatusAccepted))
	d := f.deliverer(webhook.Endpoint{Name: "pd", Format: webhook.FormatPagerDuty, URL: pd.URL, RoutingKey: "R0UTING"})
	inc := f.open(1, "pd")
	f.deliver(d, 1)
	f.clock.Advance(time.Minute)
	f.close(1)
	f.deliver(d, 1)
	actions, keys := pdActions(t, pd)
	if strings.Join(actions, ",") != "trigger,resolve" || keys[0] != inc.ID || keys[1] != inc.ID {
		t.Fatalf("pagerduty got %v for %v, want trigger and resolve for %s", actions, keys, inc.ID)
	}

	// Reopened without telling any webhook (none was configured then): its clearing tells none either.
	if again := f.open(2); again.ID != inc.ID {
		t.Fatalf("reopened as %s, want %s", again.ID, inc.ID)
	}
	f.close(2)
	f.deliver(d, 0)
	if n := f.notifications(inc.ID); len(n) != 2 {
		t.Fatalf("notifications %+v", n)
	}
}

// TestResolveWaitsForItsTrigger: a resolve does not overtake a trigger that is waiting to be retried;
// PagerDuty sees the trigger first.
func TestResolveWaitsForItsTrigger(t *testing.T) {
	f := newFixture(t, sqliteStore(t))
	pd := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusAccepted
	})
	d := f.deliverer(webhook.Endpoint{Name: "pd", Format: webhook.FormatPagerDuty, URL: pd.URL, RoutingKey: "R0UTING"})
	inc := f.open(1, "pd")
	f.deliver(d, 1) // refused: retried in 10 s
	f.close(1)
	f.deliver(d, 1) // the resolve is due now and waits
	for range 4 {
		f.clock.Advance(5 * time.Minute)
		if _, err := d.DeliverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	actions, _ := pdActions(t, pd)
	if strings.Join(actions, ",") != "trigger,trigger,resolve" {
		t.Fatalf("pagerduty got %v, want the failed trigger, the trigger, then the resolve", actions)
	}
	for _, n := range f.notifications(inc.ID) {
		if n.State != store.NotificationDelivered {
			t.Fatalf("notification %+v", n)
		}
	}
}

func TestRetriesAreBoundedWithBackoffAndRecorded(t *testing.T) {
	f := newFixture(t, sqliteStore(t))
	r := newReceiver(t, always(http.StatusServiceUnavailable))
	d := f.deliverer(webhook.Endpoint{Name: "ops", Format: webhook.FormatJSON, URL: r.URL})
	inc := f.open(1, "ops")
	for attempt := 1; attempt <= store.DefaultNotificationAttempts; attempt++ {
		f.deliver(d, 1)
		if len(r.got()) != attempt {
			t.Fatalf("after attempt %d the webhook got %d requests", attempt, len(r.got()))
		}
		// Not again until the backoff has passed.
		f.clock.Advance(webhook.Backoff(attempt) - time.Second)
		f.deliver(d, 0)
		f.clock.Advance(time.Second)
	}
	f.clock.Advance(24 * time.Hour)
	f.deliver(d, 0)
	if len(r.got()) != store.DefaultNotificationAttempts {
		t.Fatalf("webhook got %d requests, want %d", len(r.got()), store.DefaultNotificationAttempts)
	}
	n := f.notifications(inc.ID)[0]
	if n.State != store.NotificationFailed || n.Attempts != store.DefaultNotificationAttempts || len(n.History) != store.DefaultNotificationAttempts ||
		!strings.Contains(n.LastError, "503") || !strings.HasPrefix(n.LastError, errcode.WebhookDeliveryFailed) {
		t.Fatalf("notification %+v", n)
	}
	for i, a := range n.History {
		if a.Status != http.StatusServiceUnavailable || a.Error == "" || a.Attempt != i+1 {
			t.Fatalf("attempt %d: %+v", i+1, a)
		}
	}
	if webhook.Backoff(1) != 10*time.Second || webhook.Backoff(2) != 30*time.Second || webhook.Backoff(20) != 10*time.Minute {
		t.Fatal("backoff schedule changed")
	}
}

func TestFlakyWebhookIsDeliveredOnRetry(t *testing.T) {
	f := newFixture(t, sqliteStore(t))
	r := newReceiver(t, func(n int) int {
		if n < 3 {
			return http.StatusBadGateway
		}
		return http.StatusAccepted
	})
	d := f.deliverer(webhook.Endpoint{Name: "ops", Format: webhook.FormatJSON, URL: r.URL})
	d.Metrics = metrics.New()
	inc := f.open(1, "ops")
	for i := range 3 {
		f.deliver(d, 1)
		f.clock.Advance(webhook.Backoff(i + 1))
	}
	f.deliver(d, 0)
	n := f.notifications(inc.ID)[0]
	if n.State != store.NotificationDelivered || len(n.History) != 3 || n.History[2].Status != http.StatusAccepted || len(r.got()) != 3 {
		t.Fatalf("notification %+v after %d requests", n, len(r.got()))
	}
	// Each attempt is counted by outcome for the plane's metrics.
	want := `
# HELP lexicon_plane_webhook_deliveries_total Webhook delivery attempts by webhook and outcome (delivered, retry, failed).
# TYPE lexicon_plane_webhook_deliveries_total counter
lexicon_plane_webhook_deliveries_total{outcome="delivered",webhook="ops"} 1
lexicon_plane_webhook_deliveries_total{outcome="retry",webhook="ops"} 2
`
	if err := testutil.GatherAndCompare(d.Metrics.Registry(), strings.NewReader(want), "lexicon_plane_webhook_deliveries_total"); err != nil {
		t.Fatal(err)
	}
}

func TestRefusedEventIsNotRetried(t *testing.T) {
	f := newFixture(t, sqliteStore(t))
	r := newReceiver(t, always(http.StatusBadRequest))
	d := f.deliverer(webhook.Endpoint{Name: "pd", Format: webhook.FormatPagerDuty, URL: r.URL, RoutingKey: "k"})
	inc := f.open(1, "pd")
	f.deliver(d, 1)
	f.clock.Advance(time.Hour)
	f.deliver(d, 0)
	if n := f.notifications(inc.ID)[0]; n.State != store.NotificationFailed || n.Attempts != 1 || len(r.got()) != 1 {
		t.Fatalf("notification %+v", n)
	}
}

func TestURLSecretsStayOutOfTheRecord(t *testing.T) {
	f := newFixture(t, sqliteStore(t))
	ln := httptest.NewServer(http.NotFoundHandler())
	url := ln.URL + "/hooks/S3CR3T-T0KEN"
	ln.Close() // nothing listens there any more
	d := f.deliverer(webhook.Endpoint{Name: "ops", Format: webhook.FormatJSON, URL: url})
	inc := f.open(1, "ops")
	f.deliver(d, 1)
	n := f.notifications(inc.ID)[0]
	if n.State != store.NotificationPending || n.LastError == "" || strings.Contains(n.LastError, "S3CR3T") ||
		strings.Contains(n.History[0].Error, "S3CR3T") {
		t.Fatalf("notification %+v", n)
	}
}

// Two replicas delivering at once send each notification once.
func TestReplicasSendEachNotificationOnce(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var url string
			if backend == "sqlite" {
				url = filepath.Join(t.TempDir(), "plane.db")
			} else {
				url = storetest.PostgresURL(t)
			}
			a, b := storetest.Open(t, url), storetest.Open(t, url)
			var hits atomic.Int32
			r := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				hits.Add(1)
				w.WriteHeader(http.StatusAccepted)
			}))
			defer r.Close()
			f := newFixture(t, a)
			e := webhook.Endpoint{Name: "ops", Format: webhook.FormatJSON, URL: r.URL}
			// Ten nodes' worth of incidents: one node, ten recipes.
			for i := range 10 {
				c := store.CaseReport{ID: int64(i + 1), Recipe: "r" + string(rune('a'+i)), State: store.CaseOpen, OpenedAt: f.clock.Now(), Summary: "x"}
				if _, err := a.CaseIntake(t.Context(), store.CaseIntakeParams{NodeID: f.node.ID, Cases: []store.CaseReport{c}, Now: f.clock.Now(), Notify: []string{"ops"}}); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			var total atomic.Int32
			for i := range 6 {
				s := a
				if i%2 == 1 {
					s = b
				}
				d := &webhook.Deliverer{Store: s, Endpoints: []webhook.Endpoint{e}, Now: f.clock.Now}
				wg.Go(func() {
					n, err := d.DeliverDue(t.Context())
					if err != nil {
						t.Errorf("DeliverDue: %v", err)
					}
					total.Add(int32(n))
				})
			}
			wg.Wait()
			if hits.Load() != 10 || total.Load() != 10 {
				t.Fatalf("webhook got %d requests from %d attempts, want 10", hits.Load(), total.Load())
			}
		})
	}
}

func TestParse(t *testing.T) {
	good := `{"webhooks": [{"name": "pd", "format": "pagerduty", "url": "https://events.pagerduty.com/v2/enqueue", "routing_key": "abc"},
		{"name": "ops-1", "format": "json", "url": "http://127.0.0.1:9/x"}]}`
	es, err := webhook.Parse([]byte(good))
	if err != nil || len(es) != 2 || webhook.Names(es)[1] != "ops-1" {
		t.Fatalf("Parse = %+v, %v", es, err)
	}
	bad := map[string]string{
		"unknown field":    `{"webhooks": [{"name": "a", "format": "json", "url": "https://x/", "secret": "s"}]}`,
		"not json":         `{"webhooks": [`,
		"two values":       `{"webhooks": []} {}`,
		"bad name":         `{"webhooks": [{"name": "A B", "format": "json", "url": "https://x/"}]}`,
		"twice":            `{"webhooks": [{"name": "a", "format": "json", "url": "https://x/"}, {"name": "a", "format": "json", "url": "https://y/"}]}`,
		"no scheme":        `{"webhooks": [{"name": "a", "format": "json", "url": "x/y"}]}`,
		"ftp":              `{"webhooks": [{"name": "a", "format": "json", "url": "ftp://x/"}]}`,
		"user info":        `{"webhooks": [{"name": "a", "format": "json", "url": "https://u:p@x/"}]}`,
		"pd without key":   `{"webhooks": [{"name": "a", "format": "pagerduty", "url": "https://x/"}]}`,
		"json with key":    `{"webhooks": [{"name": "a", "format": "json", "url": "https://x/", "routing_key": "k"}]}`,
		"format":           `{"webhooks": [{"name": "a", "format": "slack", "url": "https://x/"}]}`,
		"url quoted never": `{"webhooks": [{"name": "a", "format": "json", "url": "https://x/T0KEN\u0000"}]}`,
	}
	for name, doc := range bad {
		_, err := webhook.Parse([]byte(doc))
		if !errcode.Has(err, errcode.WebhookConfigInvalid) {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "T0KEN") {
			t.Errorf("%s: the error quotes the url: %v", name, err)
		}
	}
}

func TestLoadRefusesFilesOthersCanReadOrWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "webhooks.json")
	if err := os.WriteFile(path, []byte(`{"webhooks": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o600, 0o640, 0o400} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := webhook.Load(path); err != nil {
			t.Errorf("mode %o: %v", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o644, 0o660, 0o602, 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := webhook.Load(path); !errcode.Has(err, errcode.WebhookConfigInvalid) {
			t.Errorf("mode %o: %v", mode, err)
		}
	}
	if _, err := webhook.Load(filepath.Join(dir, "missing.json")); !errcode.Has(err, errcode.WebhookConfigInvalid) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := webhook.Load(dir); !errcode.Has(err, errcode.WebhookConfigInvalid) {
		t.Errorf("a directory: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"webhooks": [{"name": "pd", "format": "pagerduty", "url": "https://e/v2", "routing_key": "k"}]}`))
	f.Add([]byte(`{"webhooks": [{"name": "a", "format": "json", "url": "http://x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := webhook.Parse(data)
		if err != nil {
			if !errcode.Has(err, errcode.WebhookConfigInvalid) {
				t.Fatalf("uncoded error %v", err)
			}
			return
		}
		for _, e := range es {
			if !store.ValidWebhookName(e.Name) || (e.Format != webhook.FormatJSON && e.Format != webhook.FormatPagerDuty) {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}
