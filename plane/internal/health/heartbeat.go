package health

import (
	"context"
	"log/slog"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// DefaultEvery is how often a replica heartbeats (and samples its memory); the lease it announces is
// DefaultLeaseFactor times that.
const (
	DefaultEvery       = 10 * time.Second
	DefaultLeaseFactor = 6
)

// HeartbeatStore is what a heartbeat writes to.
type HeartbeatStore interface {
	ReplicaHeartbeat(ctx context.Context, p store.ReplicaHeartbeatParams) (store.Replica, error)
}

// Config sets up a Heartbeat.
type Config struct {
	Store HeartbeatStore
	// ID names the replica: stable across its restarts (so its memory peak is kept), distinct from
	// every other replica's.
	ID, Version, Address string
	// Services names the background services this replica runs.
	Services []string
	// Every is how often it heartbeats; 0 means DefaultEvery. Lease is how long it may be silent
	// before it counts as missing; 0 means DefaultLeaseFactor × Every.
	Every, Lease time.Duration
	// MemoryAlert is the share of MemoryLimit above which plane:memory is raised (0: never).
	// MemoryLimit 0 means MemoryLimit("/").
	MemoryAlert float64
	MemoryLimit int64
	// Sample reads the memory; nil means SampleMemory.
	Sample func() Memory
	// Routes, when not nil, are the route counts sent with each heartbeat.
	Routes *RouteCounts
	// Now is the clock; nil means time.Now. NewTicker is the Periodic's (tests send ticks).
	Now       func() time.Time
	NewTicker services.NewTickerFunc
	Log       *slog.Logger
}

// Heartbeat is the service that tells the store this replica is alive, with its memory and route
// counts, at start and on every tick.
type Heartbeat struct {
	*services.Periodic
	c       Config
	started time.Time
}

// NewHeartbeat makes the service; Start runs it.
func NewHeartbeat(c Config) *Heartbeat {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Every == 0 {
		c.Every = DefaultEvery
	}
	if c.Lease == 0 {
		c.Lease = DefaultLeaseFactor * c.Every
	}
	if c.Sample == nil {
		c.Sample = SampleMemory
	}
	if c.MemoryLimit == 0 {
		c.MemoryLimit = MemoryLimit("/")
	}
	c.Log = services.Logger(c.Log)
	h := &Heartbeat{c: c, started: c.Now()}
	h.Periodic = &services.Periodic{Name: "replica heartbeat", Every: c.Every, Step: h.Beat, RunAtStart: true, NewTicker: c.NewTicker}
	return h
}

// Beat samples the memory and heartbeats once.
func (h *Heartbeat) Beat(ctx context.Context) {
	m := h.c.Sample()
	var routes []store.RouteCount
	if h.c.Routes != nil {
		routes = h.c.Routes.Snapshot()
	}
	_, err := h.c.Store.ReplicaHeartbeat(ctx, store.ReplicaHeartbeatParams{
		ID: h.c.ID, Version: h.c.Version, Address: h.c.Address, StartedAt: h.started, Lease: h.c.Lease,
		Services: h.c.Services, HeapBytes: m.Heap, RSSBytes: m.RSS, MemoryLimitBytes: h.c.MemoryLimit,
		MemoryAlert: h.c.MemoryAlert, Routes: routes, Now: h.c.Now(),
	})
	if err != nil && ctx.Err() == nil {
		h.c.Log.Warn("replica heartbeat failed", "replica", h.c.ID, "err", err)
	}
}

var _ services.Service = (*Heartbeat)(nil)
