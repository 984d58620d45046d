package metrics_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/lexicon-fleet/lexicon/agent/internal/metrics"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestServedAndLinted serves the page on loopback, as lexicon-agent run does, and holds every series
// to the client library's linter and to what was recorded.
func TestServedAndLinted(t *testing.T) {
	a := metrics.New()
	a.WordRun("host_report", "completed", 40*time.Millisecond)
	a.WordRun("host_report", "refused", 0)
	a.CapabilityCall("sys.facts", true)
	a.CapabilityCall("fs.read", false)
	a.CapabilityCall("made.up", false)
	a.RecipeVerdict("disk_headroom", "pass")

	ln, err := metrics.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { _ = a.Serve(ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	problems, err := promlint.New(strings.NewReader(string(body))).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	for _, want := range []string{
		`lexicon_agent_words_total{outcome="completed",word="host_report"} 1`,
		`lexicon_agent_words_total{outcome="refused",word="host_report"} 1`,
		`lexicon_agent_word_duration_seconds_count{word="host_report"} 2`,
		`lexicon_agent_capability_calls_total{capability="sys.facts"} 1`,
		`lexicon_agent_capability_denials_total{capability="fs.read"} 1`,
		`lexicon_agent_capability_denials_total{capability="other"} 1`,
		`lexicon_agent_capability_denials_total{capability="sys.facts"} 0`,
		`lexicon_agent_recipe_verdicts_total{recipe="disk_headroom",verdict="pass"} 1`,
		`lexicon_agent_update_state{state="none"} 1`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// TestUpdateStateIsOneHot: the state set last is 1 and every state set before is 0.
func TestUpdateStateIsOneHot(t *testing.T) {
	a := metrics.New()
	a.SetUpdateState("fetching")
	a.SetUpdateState("trial")
	want := `
# HELP lexicon_agent_update_state 1 for the self-update state the agent is in, 0 for the others.
# TYPE lexicon_agent_update_state gauge
lexicon_agent_update_state{state="fetching"} 0
lexicon_agent_update_state{state="none"} 0
lexicon_agent_update_state{state="trial"} 1
`
	if err := testutil.GatherAndCompare(a.Registry(), strings.NewReader(want), "lexicon_agent_update_state"); err != nil {
		t.Fatal(err)
	}
}

// TestListenRefusesAnythingButLoopback: the page has no authentication, so it never leaves the machine.
func TestListenRefusesAnythingButLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:9100", "[::]:0", "example.org:9100", "127.0.0.1"} {
		_, err := metrics.Listen(addr)
		testkit.WantCode(t, err, errcode.UsageInvalid)
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := metrics.Listen(addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		ln.Close()
	}
}

func TestNilRecordsNothing(t *testing.T) {
	var a *metrics.Agent
	a.WordRun("w", "completed", time.Second)
	a.CapabilityCall("fs.read", false)
	a.RecipeVerdict("r", "fail")
	a.SetUpdateState("trial")
}
