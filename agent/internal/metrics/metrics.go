// Package metrics is what the agent counts about itself, in the Prometheus text format, served only on
// a loopback address (lexicon-agent run --metrics-listen 127.0.0.1:PORT). The series live in one
// registry made by New and passed to the parts that record into them; a nil *Agent records nothing.
//
// The series, all prefixed lexicon_agent_:
//
//	words_total{word,outcome}              counter   words run for jobs and repairs: completed, failed, refused
//	word_duration_seconds{word}            histogram how long each run took
//	capability_calls_total{capability}     counter   host calls words made (an unknown capability is "other")
//	capability_denials_total{capability}   counter   of those, the ones refused
//	recipe_verdicts_total{recipe,verdict}  counter   recipe checks: pass, fail, unknown
//	update_state{state}                    gauge     1 for the self-update state the agent is in, 0 for the others
//
// and the Go runtime (go_*) and process (process_*) collectors.
package metrics

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

const ns = "lexicon_agent"

// The update states an agent reports before self-update names its own; SetUpdateState takes any.
const (
	UpdateNone = "none" // no update under way
)

// OtherCapability stands for a capability name the agent does not know: a word may ask for anything,
// and a label must not take whatever it asks.
const OtherCapability = "other"

// OtherWord stands for a word a job named that is not in the node's vocabulary.
const OtherWord = "other"

var capabilities = []string{
	capv1.CapFSRead, capv1.CapFSStat, capv1.CapFSList, capv1.CapFSWrite, capv1.CapFSRemove,
	capv1.CapSysFacts, capv1.CapSysDisk, capv1.CapSystemdUnit, capv1.CapSystemdRestart,
	capv1.CapSystemdResetFailed, capv1.CapJournalRead, capv1.CapJournalVacuum, capv1.CapSystemdEnable,
	capv1.CapNetHTTP, capv1.CapTLSPeer, capv1.CapExecPinned,
}

// Agent holds the agent's series and their registry.
type Agent struct {
	reg      *prometheus.Registry
	handler  http.Handler
	words    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	verdicts *prometheus.CounterVec
	update   *prometheus.GaugeVec
	// calls and denials by capability, resolved once: a word may make thousands of calls.
	calls, denials map[string]prometheus.Counter

	mu     sync.Mutex
	states map[string]bool // every update state reported so far
}

// New makes the agent's registry, with the update state "none".
func New() *Agent {
	a := &Agent{
		reg: prometheus.NewRegistry(),
		words: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "words_total",
			Help: "Words run for jobs and repairs, by word and outcome (completed, failed, refused)."}, []string{"word", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "word_duration_seconds",
			Help:    "How long each word run took, by word.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"word"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "recipe_verdicts_total",
			Help: "Recipe checks by recipe and verdict (pass, fail, unknown)."}, []string{"recipe", "verdict"}),
		update: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "update_state",
			Help: "1 for the self-update state the agent is in, 0 for the others."}, []string{"state"}),
		calls: map[string]prometheus.Counter{}, denials: map[string]prometheus.Counter{},
		states: map[string]bool{},
	}
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "capability_calls_total",
		Help: "Capability calls words made, by capability."}, []string{"capability"})
	denials := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "capability_denials_total",
		Help: "Capability calls refused by the manifest's bounds or the node's policy, by capability."}, []string{"capability"})
	for _, c := range append(capabilities, OtherCapability) {
		a.calls[c], a.denials[c] = calls.WithLabelValues(c), denials.WithLabelValues(c)
	}
	a.reg.MustRegister(a.words, a.duration, a.verdicts, a.update, calls, denials,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.SetUpdateState(UpdateNone)
	a.handler = promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{Registry: a.reg})
	return a
}

// Registry is where the series are gathered from.
func (a *Agent) Registry() *prometheus.Registry { return a.reg }

// Handler serves the series in the Prometheus text format.
func (a *Agent) Handler() http.Handler { return a.handler }

// WordRun counts one run of word.
func (a *Agent) WordRun(word, outcome string, d time.Duration) {
	if a == nil {
		return
	}
	a.words.WithLabelValues(word, outcome).Inc()
	a.duration.WithLabelValues(word).Observe(d.Seconds())
}

// CapabilityCall counts one capability call, and its denial when it was not allowed.
func (a *Agent) CapabilityCall(capability string, allowed bool) {
	if a == nil {
		return
	}
	c, ok := a.calls[capability]
	if !ok {
		capability = OtherCapability
		c = a.calls[capability]
	}
	c.Inc()
	if !allowed {
		a.denials[capability].Inc()
	}
}

// RecipeVerdict counts one check of recipe.
func (a *Agent) RecipeVerdict(recipe, verdict string) {
	if a != nil {
		a.verdicts.WithLabelValues(recipe, verdict).Inc()
	}
}

// SetUpdateState reports the self-update state the agent is in: its series is 1 and every other state
// reported so far is 0. Self-update calls it as it moves (its own state names); New reports "none".
func (a *Agent) SetUpdateState(state string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.states[state] = true
	for s := range a.states {
		v := 0.0
		if s == state {
			v = 1
		}
		a.update.WithLabelValues(s).Set(v)
	}
}

// Listen opens addr for the metrics page, refusing (usage.invalid) any address that is not loopback:
// the page is served without authentication, so it stays on the machine.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, cli.UsageError("--metrics-listen %q is not host:port", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, cli.UsageError("--metrics-listen must be a loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT), not %q: the page has no authentication", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot listen on %s for metrics", addr)
	}
	return ln, nil
}

// Serve serves the metrics page on ln at /metrics until ln is closed.
func (a *Agent) Serve(ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}
