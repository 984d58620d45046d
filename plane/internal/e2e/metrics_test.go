package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/lexicon-fleet/lexicon/plane/internal/metrics/metricstest"
)

// TestMetricsScraped runs a job through a real plane and a real agent, then scrapes the plane (on its
// admin API with a token, and on --metrics-listen without one) and the agent (on its loopback
// --metrics-listen): every series passes the client library's linter, and the job shows in both.
func TestMetricsScraped(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{serveArgs: []string{"--metrics-listen", "127.0.0.1:0"}})
		if f.metrics == "" {
			t.Fatal("the plane's ready line names no metrics address")
		}
		a := f.newAgent("web-1", acceptLookAndChange)
		a.runArgs = []string{"--metrics-listen", "127.0.0.1:0"}
		a.join()
		a.approve()
		a.start()
		job := f.runJob(a.nodeID, "host_report")
		if job["state"] != "completed" {
			t.Fatalf("host_report: %v", job)
		}
		// One request the plane refuses for its signature: an unsigned claim.
		resp, err := planeClient(t, f.ca).Post(f.url+"/api/v1/agent/claim", "application/json", strings.NewReader("{}"))
		must(t, err)
		resp.Body.Close()

		// The admin route needs a token, like every admin route.
		resp, err = planeClient(t, f.ca).Get(f.url + "/api/v1/admin/metrics")
		must(t, err)
		var e struct{ Error struct{ Code string } }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || e.Error.Code != "auth.required" {
			t.Fatalf("metrics without a token: %d %+v", resp.StatusCode, e)
		}
		tok, err := os.ReadFile(f.tokenFile)
		must(t, err)
		req, _ := http.NewRequest(http.MethodGet, f.url+"/api/v1/admin/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		admin := scrapeLinted(t, planeClient(t, f.ca), req)
		open := scrapeLinted(t, http.DefaultClient, mustRequest(t, "http://"+f.metrics+"/metrics"))

		for _, fams := range []map[string]*dto.MetricFamily{admin, open} {
			atLeast(t, fams, 1, "lexicon_plane_jobs_queued_total", "word", "host_report")
			atLeast(t, fams, 1, "lexicon_plane_jobs_total", "outcome", "completed", "word", "host_report")
			atLeast(t, fams, 1, "lexicon_plane_job_dispatch_seconds")
			atLeast(t, fams, 1, "lexicon_plane_store_statement_seconds", "query", "JobInsert")
			atLeast(t, fams, 1, "lexicon_plane_store_statement_seconds", "query", "commit")
			atLeast(t, fams, 1, "lexicon_plane_signature_failures_total", "reason", "channel.unsigned")
			atLeast(t, fams, 0, "lexicon_plane_claims_in_flight")
			atLeast(t, fams, 0, "lexicon_plane_long_polls_held")
			atLeast(t, fams, 0, "lexicon_plane_rate_limited_total", "scope", "node")
			atLeast(t, fams, 0, "lexicon_plane_incidents", "condition", "open", "triage", "new")
			atLeast(t, fams, 1, "go_goroutines")
			atLeast(t, fams, 1, "process_resident_memory_bytes")
		}

		a.p.logged(t, `"msg":"metrics served"`)
		url := regexp.MustCompile(`"msg":"metrics served","url":"(http://127\.0\.0\.1:\d+/metrics)"`).FindStringSubmatch(a.p.log())
		if url == nil {
			t.Fatalf("the agent's log names no loopback metrics url:\n%s", a.p.log())
		}
		fams := scrapeLinted(t, http.DefaultClient, mustRequest(t, url[1]))
		exactly(t, fams, 1, "lexicon_agent_words_total", "outcome", "completed", "word", "host_report")
		exactly(t, fams, 1, "lexicon_agent_word_duration_seconds", "word", "host_report")
		atLeast(t, fams, 1, "lexicon_agent_capability_calls_total", "capability", "sys.facts")
		exactly(t, fams, 0, "lexicon_agent_capability_denials_total", "capability", "sys.facts")
		exactly(t, fams, 1, "lexicon_agent_update_state", "state", "none")
		atLeast(t, fams, 1, "process_resident_memory_bytes")
	})
}

// TestAgentMetricsOnlyOnLoopback: an agent asked to serve its metrics on another address refuses to
// start, with usage.invalid, before it does anything else.
func TestAgentMetricsOnlyOnLoopback(t *testing.T) {
	out := runJSON(t, true, "lexicon-agent", "run", "--state-dir", t.TempDir(), "--config-dir", t.TempDir(), "--metrics-listen", "0.0.0.0:9100")
	if msg, _ := out["message"].(string); out["code"] != "usage.invalid" || !strings.Contains(msg, "loopback") {
		t.Fatalf("lexicon-agent run --metrics-listen 0.0.0.0:9100: %v", out)
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	must(t, err)
	return req
}

// scrapeLinted fetches a metrics page, fails the test on anything promlint reports, and parses it.
func scrapeLinted(t *testing.T, c *http.Client, req *http.Request) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := c.Do(req)
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d\n%s", req.URL, resp.StatusCode, body)
	}
	return metricstest.Parse(t, req.URL.String(), body)
}

func atLeast(t *testing.T, fams map[string]*dto.MetricFamily, min float64, name string, labels ...string) {
	t.Helper()
	if got := metricstest.Value(fams, name, labels...); got < min {
		t.Errorf("%s%v = %v, want at least %v (-1: missing)", name, labels, got, min)
	}
}

func exactly(t *testing.T, fams map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	t.Helper()
	if got := metricstest.Value(fams, name, labels...); got != want {
		t.Errorf("%s%v = %v, want %v (-1: missing)", name, labels, got, want)
	}
}
