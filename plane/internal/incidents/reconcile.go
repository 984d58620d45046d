// Package incidents keeps the plane's incidents: its detectors compare, on every tick, what the store
// holds (silent agents, refusals, lost jobs, untrusted releases, halted rollouts, the plane's own health:
// failing drivers, replicas over their memory alert, failing routes, missing replicas; and its machines:
// provisionings whose instance could not be deleted, instances past 80% of their monthly transfer) with
// the open incidents and write only the differences, and its room answers people about incidents and
// records their triage and notes.
package incidents

import (
	"context"
	"log/slog"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// DefaultEvery is how often the detectors run.
const DefaultEvery = 30 * time.Second

// ReconcileStore is what the reconciler runs the detectors through.
type ReconcileStore interface {
	IncidentReconcile(ctx context.Context, p store.IncidentReconcileParams) (store.IncidentReconcileResult, error)
}

// Config sets up a Reconciler.
type Config struct {
	Store ReconcileStore
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Up is when this plane process started: silence is counted from it, so a plane that was down does
	// not find the whole fleet silent the moment it comes back. Zero means Now() at NewReconciler.
	Up  time.Time
	Log *slog.Logger
	// Every is how often the detectors run; 0 means DefaultEvery.
	Every time.Duration
	// Webhooks names the webhooks an opened or reopened incident notifies.
	Webhooks []string
	// Detector settings; 0 means the store's defaults (10 minutes; more than 5 refusals in an hour).
	SilentAfter      time.Duration
	RefusalThreshold int
	// Health tunes the plane's own detectors; zero fields mean the store's defaults.
	Health store.HealthThresholds
	// Packages is what the package detectors count as critical and how long a critical fix may wait
	// (lexicon-plane serve gives the fleet security view's); no patterns and nothing served:
	// plane:critical_fix_waiting is not judged.
	Packages store.PackageThresholds
	// PackagesNow, when set, is asked each pass instead of Packages: the critical list can change at
	// run time and what each node serves follows its roles (the fleet security room's Thresholds), and
	// the incidents must judge by what the page shows. An error skips the pass, logged.
	PackagesNow func(ctx context.Context) (store.PackageThresholds, error)
	// ExpiryLead is how long before the release the fleet is served expires plane:release_expiring
	// opens; 0 means store.DefaultExpiryLead (14 days).
	ExpiryLead time.Duration
	// Queued, when not nil, is called after a run that queued notifications (it wakes this process's
	// deliverer).
	Queued func()
}

// Reconciler runs the detectors. Every replica runs one: the store serialises the runs, and a run that
// finds nothing new writes nothing.
type Reconciler struct {
	*services.Periodic
	c Config
}

// NewReconciler makes the reconciler; Start runs it.
func NewReconciler(c Config) *Reconciler {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Up.IsZero() {
		c.Up = c.Now()
	}
	c.Log = services.Logger(c.Log)
	if c.Every == 0 {
		c.Every = DefaultEvery
	}
	r := &Reconciler{c: c}
	r.Periodic = &services.Periodic{Name: "incident reconciler", Every: c.Every, Step: r.Reconcile}
	return r
}

// Reconcile runs the detectors once.
func (r *Reconciler) Reconcile(ctx context.Context) {
	pkgs := r.c.Packages
	if r.c.PackagesNow != nil {
		var err error
		if pkgs, err = r.c.PackagesNow(ctx); err != nil {
			if ctx.Err() == nil {
				r.c.Log.Warn("incident reconciliation skipped: the critical package list could not be read", "err", err)
			}
			return
		}
	}
	res, err := r.c.Store.IncidentReconcile(ctx, store.IncidentReconcileParams{
		Now: r.c.Now(), Up: r.c.Up, Notify: r.c.Webhooks, SilentAfter: r.c.SilentAfter, RefusalThreshold: r.c.RefusalThreshold,
		Health: r.c.Health, Packages: pkgs, ExpiryLead: r.c.ExpiryLead,
	})
	if err != nil {
		if ctx.Err() == nil {
			r.c.Log.Warn("incident reconciliation failed", "err", err)
		}
		return
	}
	if LogChanges(r.c.Log, res.Changes) && r.c.Queued != nil {
		r.c.Queued()
	}
}

// LogChanges logs each change to an incident and reports whether any queued a notification. Intake (in
// the claim handler) and the reconciler both use it, so a change reads the same whoever made it.
func LogChanges(log *slog.Logger, changes []store.IncidentChange) (queued bool) {
	for _, ch := range changes {
		log.Info("incident "+string(ch.Event.Kind), "incident", ch.Incident.ID, "node", ch.Incident.NodeID,
			"source", ch.Incident.Source, "subject", ch.Incident.Subject, "severity", ch.Incident.Severity, "condition", ch.Incident.Condition,
			"triage", ch.Incident.Triage, "notifications", ch.Notifications)
		queued = queued || ch.Notifications > 0
	}
	return queued
}

var _ services.Service = (*Reconciler)(nil)
