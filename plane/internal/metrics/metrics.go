// Package metrics is what the plane counts about itself, in the Prometheus text format: every series
// lives in one registry made by New and passed to the parts that record into it, never in a global.
// A nil *Plane records nothing, so a part built without metrics (in a test, say) needs no branch.
//
//	m := metrics.New()
//	st, err := open.URL(ctx, url, open.WithObserver(m))
//	m.CollectIncidents(st, 0)
//	srv := wire.New(wire.Config{Store: st, Metrics: m, ...})
//	http.Handle("/metrics", m.Handler())
//
// The series, all prefixed lexicon_plane_:
//
//	claims_in_flight                         gauge     claim requests being served
//	long_polls_held                          gauge     claims held waiting for a job
//	jobs_queued_total{word}                  counter   jobs queued through the admin API
//	jobs_total{word,outcome}                 counter   jobs ended: completed, failed, refused, lost
//	job_dispatch_seconds                     histogram queued until handed to its node
//	store_statement_seconds{query}           histogram each statement the store runs, by its name in
//	                                                   queries*.sql ("commit": a transaction's commit)
//	store_statement_errors_total{query}      counter   statements that failed (a missing row is no failure)
//	driver_calls_total{driver,operation,outcome} counter  outcome "ok" or the call's error code
//	driver_call_seconds{driver,operation}    histogram
//	webhook_deliveries_total{webhook,outcome} counter  outcome delivered, retry or failed
//	incidents{condition,triage}              gauge     read from the store at each scrape
//	rate_limited_total{scope}                counter   requests refused by a rate limit (node, address)
//	signature_failures_total{reason}         counter   agent-channel signatures refused, by error code
//
// and the Go runtime (go_*) and process (process_*) collectors.
package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lexicon-fleet/lexicon/plane/store"
)

const ns = "lexicon_plane"

// Job outcomes beyond the channel's completed, failed and refused.
const OutcomeLost = "lost"

// Webhook delivery outcomes.
const (
	DeliveryDelivered = "delivered"
	DeliveryRetry     = "retry"
	DeliveryFailed    = "failed"
)

// Rate-limit scopes.
const (
	ScopeNode    = "node"
	ScopeAddress = "address"
)

// OutcomeOK is a driver call that succeeded; a failed one is counted under its error code.
const OutcomeOK = "ok"

// Plane holds the plane's series and the registry they are gathered from.
type Plane struct {
	reg     *prometheus.Registry
	handler http.Handler

	claimsInFlight  prometheus.Gauge
	longPolls       prometheus.Gauge
	jobsQueued      *prometheus.CounterVec
	jobs            *prometheus.CounterVec
	dispatch        prometheus.Histogram
	stmt            *prometheus.HistogramVec
	stmtErrors      *prometheus.CounterVec
	driverCalls     *prometheus.CounterVec
	driverSeconds   *prometheus.HistogramVec
	deliveries      *prometheus.CounterVec
	rateLimited     [2]prometheus.Counter // node, address: resolved once
	signatureFailed *prometheus.CounterVec
}

// New makes the plane's registry with every series registered but the incidents (CollectIncidents).
func New() *Plane {
	reg := prometheus.NewRegistry()
	p := &Plane{
		reg: reg,
		claimsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "claims_in_flight",
			Help: "Agent claim requests being served by this replica."}),
		longPolls: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "long_polls_held",
			Help: "Claims held by this replica waiting for a job (long polls)."}),
		jobsQueued: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "jobs_queued_total",
			Help: "Jobs queued through the admin API, by word."}, []string{"word"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "jobs_total",
			Help: "Jobs ended, by word and outcome (completed, failed, refused, lost)."}, []string{"word", "outcome"}),
		dispatch: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "job_dispatch_seconds",
			Help:    "Time from a job being queued to its being handed to its node.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}),
		stmt: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "store_statement_seconds",
			Help:    "Store statements by their name in the dialect's queries*.sql; commit is a transaction's commit.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}}, []string{"query"}),
		stmtErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "store_statement_errors_total",
			Help: "Store statements that failed (a missing row is not a failure), by name."}, []string{"query"}),
		driverCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "driver_calls_total",
			Help: "Driver calls by driver, operation and outcome (ok, or the error code)."}, []string{"driver", "operation", "outcome"}),
		driverSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "driver_call_seconds",
			Help: "Driver call durations by driver and operation.", Buckets: prometheus.DefBuckets}, []string{"driver", "operation"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "webhook_deliveries_total",
			Help: "Webhook delivery attempts by webhook and outcome (delivered, retry, failed)."}, []string{"webhook", "outcome"}),
		signatureFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "signature_failures_total",
			Help: "Agent-channel requests whose signature was refused, by error code."}, []string{"reason"}),
	}
	limited := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "rate_limited_total",
		Help: "Requests refused by a rate limit, by scope (node, address)."}, []string{"scope"})
	p.rateLimited = [2]prometheus.Counter{limited.WithLabelValues(ScopeNode), limited.WithLabelValues(ScopeAddress)}
	reg.MustRegister(p.claimsInFlight, p.longPolls, p.jobsQueued, p.jobs, p.dispatch, p.stmt, p.stmtErrors,
		p.driverCalls, p.driverSeconds, p.deliveries, limited, p.signatureFailed,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	return p
}

// IncidentCounter counts the incidents in the store.
type IncidentCounter interface {
	IncidentCount(ctx context.Context, p store.IncidentCountParams) ([]store.IncidentCount, error)
}

// CollectIncidents reads the incident counts from st at each scrape, each read bounded by timeout
// (0: 5s). It is separate from New because the store is opened with the Plane as its Observer.
func (p *Plane) CollectIncidents(st IncidentCounter, timeout time.Duration) {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	p.reg.MustRegister(&incidentCollector{st: st, timeout: timeout,
		desc: prometheus.NewDesc(ns+"_incidents", "Incidents in the store by condition and triage, read at each scrape.",
			[]string{"condition", "triage"}, nil)})
}

// Registry is where the series are gathered from.
func (p *Plane) Registry() *prometheus.Registry { return p.reg }

// Handler serves the series in the Prometheus text format.
func (p *Plane) Handler() http.Handler { return p.handler }

// ClaimStarted counts a claim being served, until ClaimEnded. (A pair of calls rather than a returned
// func: a method value would allocate on every claim.)
func (p *Plane) ClaimStarted() {
	if p != nil {
		p.claimsInFlight.Inc()
	}
}

// ClaimEnded ends what ClaimStarted counted.
func (p *Plane) ClaimEnded() {
	if p != nil {
		p.claimsInFlight.Dec()
	}
}

// LongPollStarted counts a claim held waiting for a job, until LongPollEnded.
func (p *Plane) LongPollStarted() {
	if p != nil {
		p.longPolls.Inc()
	}
}

// LongPollEnded ends what LongPollStarted counted.
func (p *Plane) LongPollEnded() {
	if p != nil {
		p.longPolls.Dec()
	}
}

// JobQueued counts a job queued for word.
func (p *Plane) JobQueued(word string) {
	if p != nil {
		p.jobsQueued.WithLabelValues(word).Inc()
	}
}

// JobDispatched records how long a job waited between being queued and handed out.
func (p *Plane) JobDispatched(queued, now time.Time) {
	if p != nil {
		p.dispatch.Observe(max(now.Sub(queued), 0).Seconds())
	}
}

// JobEnded counts a job of word ending with outcome.
func (p *Plane) JobEnded(word, outcome string) {
	if p != nil {
		p.jobs.WithLabelValues(word, outcome).Inc()
	}
}

// RateLimited counts a request refused by the limit of scope (ScopeNode or ScopeAddress).
func (p *Plane) RateLimited(scope string) {
	if p == nil {
		return
	}
	if scope == ScopeNode {
		p.rateLimited[0].Inc()
	} else {
		p.rateLimited[1].Inc()
	}
}

// SignatureFailed counts an agent-channel signature refused with code reason.
func (p *Plane) SignatureFailed(reason string) {
	if p != nil {
		p.signatureFailed.WithLabelValues(reason).Inc()
	}
}

// DriverCall counts one driver call; outcome is OutcomeOK or its error code.
func (p *Plane) DriverCall(driver, operation, outcome string, d time.Duration) {
	if p != nil {
		p.driverCalls.WithLabelValues(driver, operation, outcome).Inc()
		p.driverSeconds.WithLabelValues(driver, operation).Observe(d.Seconds())
	}
}

// WebhookDelivery counts one delivery attempt to webhook.
func (p *Plane) WebhookDelivery(webhook, outcome string) {
	if p != nil {
		p.deliveries.WithLabelValues(webhook, outcome).Inc()
	}
}

// Statement gives the store statement called name a timer that resolves its series on its first run,
// once: later runs cost no label lookup, and a statement never run shows no series. It makes Plane a
// store.Observer.
func (p *Plane) Statement(name string) store.StatementTimer {
	if p == nil {
		return nil
	}
	return &statementTimer{p: p, name: name}
}

type statementTimer struct {
	p    *Plane
	name string
	once sync.Once
	h    prometheus.Observer
}

func (t *statementTimer) Observe(d time.Duration, failed bool) {
	t.once.Do(func() { t.h = t.p.stmt.WithLabelValues(t.name) })
	t.h.Observe(d.Seconds())
	if failed {
		t.p.stmtErrors.WithLabelValues(t.name).Inc() // rare: resolved when it happens
	}
}

var _ store.Observer = (*Plane)(nil)

// incidentCollector reads the incident counts from the store when scraped, so that every replica
// reports the same figures and nothing has to be kept in step with the store.
type incidentCollector struct {
	st      IncidentCounter
	timeout time.Duration
	desc    *prometheus.Desc

	mu sync.Mutex // one store read at a time, however many scrapers
}

func (c *incidentCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *incidentCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	counts, err := c.st.IncidentCount(ctx, store.IncidentCountParams{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	// Every combination is reported, zeros included, so that a series does not vanish when its last
	// incident changes state.
	seen := map[[2]string]int64{}
	for _, n := range counts {
		seen[[2]string{string(n.Condition), string(n.Triage)}] += n.Count
	}
	for _, cond := range []store.Condition{store.ConditionOpen, store.ConditionCleared} {
		for _, tr := range []store.Triage{store.TriageNew, store.TriageSnoozed, store.TriageResolved, store.TriageIgnored} {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(seen[[2]string{string(cond), string(tr)}]), string(cond), string(tr))
		}
	}
}
