package services

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"sync"
	"time"
)

// DefaultLeaseTTL is how long an engine's lease on a record lasts unless renewed.
const DefaultLeaseTTL = 30 * time.Second

// EngineBase is what the plane's engines share (the rollout engine, the provisioning engine, the
// transfer watch): who this replica is in the leases it takes on the records it advances, how long
// those leases last, the clock, the log, and the service that runs a pass on every tick and at once
// when woken. An engine embeds it; its zero value works (30 s leases, time.Now, slog.Default).
type EngineBase struct {
	// Holder names this replica in leases; it must differ between replicas.
	Holder string
	Log    *slog.Logger
	// LeaseTTL is how long a lease lasts unless renewed; every pass renews what it holds. 0: 30 s.
	LeaseTTL time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time

	once sync.Once
	wake chan struct{}
}

// Logger is the engine's log: Log, or slog.Default when it is nil, as every part of the plane falls
// back.
func (b *EngineBase) Logger() *slog.Logger { return Logger(b.Log) }

// Time is the engine's clock read now, in UTC.
func (b *EngineBase) Time() time.Time {
	if b.Now == nil {
		return time.Now().UTC()
	}
	return b.Now().UTC()
}

// TTL is how long the engine's leases last.
func (b *EngineBase) TTL() time.Duration {
	if b.LeaseTTL <= 0 {
		return DefaultLeaseTTL
	}
	return b.LeaseTTL
}

// Wake asks for a pass now (this process changed something the engine advances). It never blocks:
// wake-ups coalesce into one pending pass.
func (b *EngineBase) Wake() {
	select {
	case b.wakeCh() <- struct{}{}:
	default:
	}
}

func (b *EngineBase) wakeCh() chan struct{} {
	b.once.Do(func() { b.wake = make(chan struct{}, 1) })
	return b.wake
}

// Service runs pass once at start, on every tick of every, and at once after each Wake. A pass that
// fails is logged; the next tick tries again.
func (b *EngineBase) Service(name string, every time.Duration, pass func(ctx context.Context) error) *Periodic {
	return &Periodic{Name: name, Every: every, Wake: b.wakeCh(), RunAtStart: true, Step: func(ctx context.Context) {
		if err := pass(ctx); err != nil && ctx.Err() == nil {
			b.Logger().Warn("pass failed", "service", name, "err", err)
		}
	}}
}

// Logger is l, or slog.Default when l is nil: the one way every part of the plane falls back.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// NewHolder names an engine of this process in leases: the host and a random part, so that two
// replicas on one host, or a restarted one, never pass for each other.
func NewHolder() string {
	host, _ := os.Hostname()
	return "plane:" + host + ":" + hex.EncodeToString(randomBytes(6))
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}
