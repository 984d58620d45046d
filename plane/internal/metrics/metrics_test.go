package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics/metricstest"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
)

// scrape fetches the page over HTTP, fails the test on any problem the client library's linter finds,
// and returns the families by name.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	ts := httptest.NewServer(h)
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scrape: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return metricstest.Parse(t, "scrape", body)
}

func TestEverySeriesLintsAndCounts(t *testing.T) {
	m := metrics.New()
	st, err := open.SQLite(t.Context(), filepath.Join(t.TempDir(), "plane.db"), open.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m.CollectIncidents(st, 0)

	m.ClaimStarted()
	m.LongPollStarted()
	m.LongPollStarted()
	m.LongPollEnded()
	m.JobQueued("host_report")
	now := time.Now()
	m.JobDispatched(now.Add(-300*time.Millisecond), now)
	m.JobEnded("host_report", "completed")
	m.JobEnded("host_report", metrics.OutcomeLost)
	m.DriverCall("dns-memory", "zones", metrics.OutcomeOK, 3*time.Millisecond)
	m.DriverCall("dns-memory", "zones", "driver.timeout", time.Second)
	m.WebhookDelivery("ops", metrics.DeliveryRetry)
	m.RateLimited(metrics.ScopeAddress)
	m.SignatureFailed("channel.clock_skew")

	scrape(t, m.Handler()) // the incident collector reads the store at each scrape
	fams := scrape(t, m.Handler())
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"lexicon_plane_claims_in_flight", nil, 1},
		{"lexicon_plane_long_polls_held", nil, 1},
		{"lexicon_plane_jobs_queued_total", []string{"word", "host_report"}, 1},
		{"lexicon_plane_job_dispatch_seconds", nil, 1},
		{"lexicon_plane_jobs_total", []string{"outcome", "completed", "word", "host_report"}, 1},
		{"lexicon_plane_jobs_total", []string{"outcome", "lost", "word", "host_report"}, 1},
		{"lexicon_plane_driver_calls_total", []string{"driver", "dns-memory", "operation", "zones", "outcome", "driver.timeout"}, 1},
		{"lexicon_plane_driver_call_seconds", []string{"driver", "dns-memory", "operation", "zones"}, 2},
		{"lexicon_plane_webhook_deliveries_total", []string{"outcome", "retry", "webhook", "ops"}, 1},
		{"lexicon_plane_rate_limited_total", []string{"scope", "address"}, 1},
		{"lexicon_plane_rate_limited_total", []string{"scope", "node"}, 0},
		{"lexicon_plane_signature_failures_total", []string{"reason", "channel.clock_skew"}, 1},
		{"lexicon_plane_incidents", []string{"condition", "open", "triage", "new"}, 0},
	} {
		if got := metricstest.Value(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The first scrape's read of the incidents, timed by the store's observer under its query's name
	// (the second's may land after its histogram was gathered).
	if got := metricstest.Value(fams, "lexicon_plane_store_statement_seconds", "query", "IncidentCount"); got < 1 {
		t.Errorf("IncidentCount timed %v times", got)
	}
	if h := fams["lexicon_plane_job_dispatch_seconds"].Metric[0].Histogram; h.GetSampleSum() < 0.3 {
		t.Errorf("dispatch sum %v, want the 0.3 s recorded", h.GetSampleSum())
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if metricstest.Value(fams, name) <= 0 {
			t.Errorf("%s missing or zero", name)
		}
	}
}

// TestStatementsAreNamed: every statement a store call runs is timed under its name from queries*.sql,
// a transaction's commit under "commit", and a failed statement is counted as an error.
func TestStatementsAreNamed(t *testing.T) {
	m := metrics.New()
	st, err := open.SQLite(t.Context(), filepath.Join(t.TempDir(), "plane.db"), open.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.TokenCreate(t.Context(), store.TokenCreateParams{Name: "a", Role: store.RoleViewer, Hash: strings.Repeat("a", 64)}); err != nil {
		t.Fatal(err)
	}
	_, _ = st.TokenGetByHash(t.Context(), store.TokenGetByHashParams{Hash: strings.Repeat("b", 64)}) // no row: no error counted
	fams := scrape(t, m.Handler())
	if got := metricstest.Value(fams, "lexicon_plane_store_statement_seconds", "query", "TokenInsert"); got < 1 {
		t.Errorf("TokenInsert timed %v times", got)
	}
	if got := metricstest.Value(fams, "lexicon_plane_store_statement_seconds", "query", "TokenGetByHash"); got != 1 {
		t.Errorf("TokenGetByHash timed %v times", got)
	}
	if got := metricstest.Value(fams, "lexicon_plane_store_statement_errors_total", "query", "TokenGetByHash"); got > 0 {
		t.Errorf("a missing row counted as %v errors", got)
	}
	if got := metricstest.Value(fams, "lexicon_plane_store_statement_seconds", "query", "commit"); got < 1 {
		t.Errorf("commits timed %v times", got)
	}
}

// TestNilRecordsNothing: a part built without metrics calls a nil *Plane.
func TestNilRecordsNothing(t *testing.T) {
	var m *metrics.Plane
	m.ClaimStarted()
	m.ClaimEnded()
	m.JobEnded("w", "completed")
	m.DriverCall("d", "op", metrics.OutcomeOK, 0)
	if m.Statement("x") != nil {
		t.Fatal("a nil Plane times statements")
	}
}

// BenchmarkClaimPath is what one claim that is handed a job records (make bench): it must not
// allocate.
func BenchmarkClaimPath(b *testing.B) {
	m := metrics.New()
	queued := time.Now().Add(-time.Second)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		m.ClaimStarted()
		m.LongPollStarted()
		m.JobDispatched(queued, now)
		m.LongPollEnded()
		m.ClaimEnded()
	}
}

// BenchmarkJobEnded is the labelled counter a result records.
func BenchmarkJobEnded(b *testing.B) {
	m := metrics.New()
	b.ReportAllocs()
	for b.Loop() {
		m.JobEnded("host_report", "completed")
	}
}
