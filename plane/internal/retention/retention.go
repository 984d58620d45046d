// Package retention removes what the plane keeps past its configured age: audit events, driver-call
// records, finished jobs and batches, and settled incidents. One replica prunes at a time, under a plane-wide lease; the ages come from the plane's
// configuration (lexicon-plane serve flags), never from an API call, so that no token can shorten the
// audit trail.
package retention

import (
	"context"
	"log/slog"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Defaults: a year and a month of audit events (a yearly review can reach back a full year), and 90
// days of driver-call records (their own operational log, which the audit trail's events outlive).
const (
	DefaultAuditAge      = 400 * 24 * time.Hour
	DefaultDriverCallAge = 90 * 24 * time.Hour
	// DefaultJobAge keeps a quarter of finished jobs' outputs and transcripts; DefaultIncidentAge keeps
	// settled incidents twice as long, since a recurrence is judged against them.
	DefaultJobAge      = 90 * 24 * time.Hour
	DefaultIncidentAge = 180 * 24 * time.Hour
	// AuditFloor is the least age the configuration may set for audit events: a plane that prunes its
	// trail sooner could hide a change before anyone looked.
	AuditFloor = 30 * 24 * time.Hour
	// DefaultEvery is how often a replica tries to prune.
	DefaultEvery = time.Hour
)

// Lease names the plane-wide lease the pruning replica holds.
const (
	LeaseSubject = "plane"
	LeaseName    = "retention"
)

// Store is what retention prunes, and the lease it takes.
type Store interface {
	AuditEventPrune(ctx context.Context, p store.PruneParams) (int64, error)
	DriverCallPrune(ctx context.Context, p store.PruneParams) (int64, error)
	JobPrune(ctx context.Context, p store.PruneParams) (int64, error)
	IncidentPrune(ctx context.Context, p store.PruneParams) (int64, error)
	BatchPrune(ctx context.Context, p store.PruneParams) (int64, error)
	LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, error)
}

// Config sets up the pruner. Zero ages mean the defaults.
type Config struct {
	Store         Store
	AuditAge      time.Duration
	DriverCallAge time.Duration
	JobAge        time.Duration
	IncidentAge   time.Duration
	Holder        string // this replica in the lease; "" makes one
	Every         time.Duration
	Now           func() time.Time
	Log           *slog.Logger
}

// Pruner is the retention service.
type Pruner struct {
	*services.Periodic
	c Config
}

// New checks the ages (an audit age under AuditFloor is usage.invalid) and makes the pruner.
func New(c Config) (*Pruner, error) {
	if c.AuditAge == 0 {
		c.AuditAge = DefaultAuditAge
	}
	if c.DriverCallAge == 0 {
		c.DriverCallAge = DefaultDriverCallAge
	}
	if c.JobAge == 0 {
		c.JobAge = DefaultJobAge
	}
	if c.IncidentAge == 0 {
		c.IncidentAge = DefaultIncidentAge
	}
	if c.AuditAge < AuditFloor {
		return nil, errcode.New(errcode.UsageInvalid, "audit events are kept at least %s, not %s", AuditFloor, c.AuditAge)
	}
	for _, a := range []struct {
		what string
		age  time.Duration
	}{{"driver calls", c.DriverCallAge}, {"jobs", c.JobAge}, {"incidents", c.IncidentAge}} {
		if a.age <= 0 {
			return nil, errcode.New(errcode.UsageInvalid, "%s are kept a positive age, not %s", a.what, a.age)
		}
	}
	if c.Holder == "" {
		c.Holder = services.NewHolder()
	}
	if c.Every == 0 {
		c.Every = DefaultEvery
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Log = services.Logger(c.Log)
	p := &Pruner{c: c}
	p.Periodic = &services.Periodic{Name: "retention", Every: c.Every, Step: func(ctx context.Context) { _, _ = p.Prune(ctx) }, RunAtStart: true}
	return p, nil
}

// Prune removes, if this replica holds the lease, what is past its age, in bounded batches; it says
// whether it held the lease.
func (p *Pruner) Prune(ctx context.Context) (bool, error) {
	now := p.c.Now()
	_, err := p.c.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{Subject: LeaseSubject, Name: LeaseName, Holder: p.c.Holder,
		Purpose: "prune past retention", TTL: p.c.Every + time.Minute, Now: now})
	if errcode.Has(err, errcode.LeaseHeld) {
		return false, nil
	}
	if err != nil {
		p.c.Log.Warn("retention lease not taken", "err", err)
		return false, err
	}
	for _, job := range []struct {
		what  string
		age   time.Duration
		prune func(context.Context, store.PruneParams) (int64, error)
	}{{"audit events", p.c.AuditAge, p.c.Store.AuditEventPrune}, {"driver calls", p.c.DriverCallAge, p.c.Store.DriverCallPrune},
		{"jobs", p.c.JobAge, p.c.Store.JobPrune}, {"batches", p.c.JobAge, p.c.Store.BatchPrune},
		{"incidents", p.c.IncidentAge, p.c.Store.IncidentPrune}} {
		var total int64
		for ctx.Err() == nil {
			n, err := job.prune(ctx, store.PruneParams{Before: now.Add(-job.age)})
			if err != nil {
				p.c.Log.Warn("retention prune failed", "what", job.what, "err", err)
				return true, err
			}
			total += n
			if n < 10000 {
				break
			}
		}
		if total > 0 {
			p.c.Log.Info("pruned past retention", "what", job.what, "count", total, "age", job.age)
		}
	}
	return true, nil
}
