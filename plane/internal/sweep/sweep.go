// Package sweep removes what has expired from the agent channel's tables: used nonces past their expiry
// and pending joins past theirs.
package sweep

import (
	"context"
	"log/slog"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// DefaultEvery is how often the sweeper runs.
const DefaultEvery = time.Minute

// Store is what the sweeper purges.
type Store interface {
	NoncePurge(ctx context.Context, p store.NoncePurgeParams) (int64, error)
	JoinExpire(ctx context.Context, p store.JoinExpireParams) (int64, error)
}

// Config sets up a Sweeper.
type Config struct {
	Store Store
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
	// Every is how often it runs; 0 means DefaultEvery.
	Every time.Duration
}

// Sweeper purges expired nonces and marks expired joins. Neither is a rule: a nonce's reuse is judged by
// its expiry whether or not it was purged, and a pending join past its expiry reads as expired either
// way. The sweep keeps the tables small and honest for people reading them. Every replica runs one; both
// statements are idempotent.
type Sweeper struct {
	*services.Periodic
	store Store
	now   func() time.Time
	log   *slog.Logger
}

// New makes the sweeper; Start runs it.
func New(c Config) *Sweeper {
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Log = services.Logger(c.Log)
	if c.Every == 0 {
		c.Every = DefaultEvery
	}
	s := &Sweeper{store: c.Store, now: c.Now, log: c.Log}
	s.Periodic = &services.Periodic{Name: "sweep", Every: c.Every, Step: s.Sweep}
	return s
}

// Sweep purges expired nonces and marks expired joins, once.
func (s *Sweeper) Sweep(ctx context.Context) {
	now := s.now()
	if n, err := s.store.NoncePurge(ctx, store.NoncePurgeParams{Now: now}); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("nonce purge failed", "err", err)
		}
	} else if n > 0 {
		s.log.Debug("nonces purged", "count", n)
	}
	if _, err := s.store.JoinExpire(ctx, store.JoinExpireParams{Now: now}); err != nil && ctx.Err() == nil {
		s.log.Warn("join expiry failed", "err", err)
	}
}

var _ services.Service = (*Sweeper)(nil)
