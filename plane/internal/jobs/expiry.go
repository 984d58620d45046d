// Package jobs queues words for nodes and follows each job to its end: it checks a job against the
// word's signed manifest before queuing it, hands jobs out to the claims of idle nodes at most once,
// takes in their results, and makes a running job past its claim budget lost, never run again.
package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// DefaultExpireEvery is how often the expirer looks for running jobs past their budget.
const DefaultExpireEvery = 5 * time.Second

// ExpiryStore is what the expirer writes through.
type ExpiryStore interface {
	JobExpire(ctx context.Context, p store.JobExpireParams) ([]store.Job, error)
	BatchStalledList(ctx context.Context, p store.BatchStalledListParams) ([]string, error)
	BatchAdvancer
}

// Config sets up an Expirer.
type Config struct {
	Store ExpiryStore
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
	// Every is how often it runs; 0 means DefaultExpireEvery.
	Every time.Duration
	// Metrics counts the jobs it makes lost (nil: not counted).
	Metrics *metrics.Plane
}

// Expirer makes running jobs past their claim budget lost. Every replica runs one: JobExpire is one
// statement, and a job another replica already marked lost is not marked again.
type Expirer struct {
	*services.Periodic
	store ExpiryStore
	now   func() time.Time
	log   *slog.Logger
	m     *metrics.Plane
	// batches moves on the batches of the jobs it makes lost.
	batches *batchMover
}

// NewExpirer makes the expirer; Start runs it.
func NewExpirer(c Config) *Expirer {
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Log = services.Logger(c.Log)
	if c.Every == 0 {
		c.Every = DefaultExpireEvery
	}
	e := &Expirer{store: c.Store, now: c.Now, log: c.Log, m: c.Metrics, batches: &batchMover{st: c.Store, log: c.Log, m: c.Metrics}}
	e.Periodic = &services.Periodic{Name: "job expiry", Every: c.Every, Step: e.Expire}
	return e
}

// Expire makes running jobs past their budget lost, once, and logs each, and advances the batches
// whose advance never ran.
func (e *Expirer) Expire(ctx context.Context) {
	lost, err := e.store.JobExpire(ctx, store.JobExpireParams{Now: e.now()})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("job expiry failed", "err", err)
		}
		return
	}
	for _, j := range lost {
		e.log.Warn("job lost: past its claim budget", "job", j.ID, "node", j.NodeID, "word", j.Word)
		e.m.JobEnded(j.Word, string(j.State))
	}
	e.batches.advance(ctx, e.now(), lost...)
	// Batches whose advance never ran: the plane stopped between a job's end and it.
	stalled, err := e.store.BatchStalledList(ctx, store.BatchStalledListParams{Limit: store.MaxListLimit})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("listing stalled batches failed", "err", err)
		}
		return
	}
	for _, id := range stalled {
		e.log.Info("batch advanced by the expirer: its advance never ran", "batch", id)
		e.batches.advanceBatch(ctx, e.now(), id)
	}
}

var _ services.Service = (*Expirer)(nil)
