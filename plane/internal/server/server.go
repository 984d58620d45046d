// Package server is the plane's HTTP surface: the agent channel (registry/channel) and the admin API
// (plane/api, whose route table it registers and whose types it answers with), on one chi router over
// the plane store. It serves requests only; the plane's background work (job expiry, sweeping, incident
// reconciling, webhook delivery) runs beside it as services (plane/internal/services).
package server

import (
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/health"
	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/joins"
	"github.com/lexicon-fleet/lexicon/plane/internal/lease"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/ui"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// Config is what a plane process needs.
type Config struct {
	Store store.Store
	// Tokens resolves bearer tokens and manages them.
	Tokens *tokens.Room
	// Releases publishes releases and serves what they pin.
	Releases *releases.Room
	// Rollouts starts and moves rollouts.
	Rollouts *rollouts.Room
	// Joins records joins and carries out an admin's decision on them.
	Joins *joins.Room
	// Nodes proves nodes, takes in their reports and answers about them.
	Nodes *nodes.Room
	// Jobs queues jobs, hands them out and takes in their results.
	Jobs *jobs.Room
	Log  *slog.Logger
	// Base is the plane's external URL, when it sits behind a proxy; nil derives it per request.
	Base *url.URL
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ClaimWait is the longest a claim is held when there is no job (each is held between four fifths
	// of it and all of it, the first on a connection served with ConnContext between a tenth and all
	// of it); 0 means channel.ClaimWait.
	ClaimWait time.Duration
	// Limits of requests per second (and bursts) per proven node and per source address.
	NodeRate, AddrRate   float64
	NodeBurst, AddrBurst int
	// Drivers runs the plane's drivers; nil refuses the driver routes.
	Drivers *drivers.Manager
	// Provision runs provisionings; nil refuses the provisioning routes (a plane without drivers).
	// Joins carrying a provisioning token are served either way.
	Provision *provision.Engine
	// ProvisionsChanged, when not nil, is called after a provisioning was started or a token join
	// recorded: it wakes this process's provisioning engine.
	ProvisionsChanged func()
	// Metrics is what this replica counts and serves on GET /api/v1/admin/metrics; nil makes a
	// registry of the server's own.
	Metrics *metrics.Plane

	// ReplicaID names this replica in GET /plane/status and /readyz.
	ReplicaID string
	// MasterKeyID is the id of the master key this replica loaded; "" means none, and /readyz says so.
	MasterKeyID string
	// RouteCounts, when not nil, counts every answer by route for plane:route_failing.
	RouteCounts *health.RouteCounts
}

// Server serves the agent channel and the admin API.
type Server struct {
	cfg       Config
	store     store.Store
	log       *slog.Logger
	now       func() time.Time
	metrics   *metrics.Plane
	nodeLimit *limiter
	addrLimit *limiter
	leases    *lease.Room
}

// New makes a server. Defaults: 20 requests/s per node (burst 40), 5/s per address (burst 20).
func New(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ClaimWait == 0 {
		cfg.ClaimWait = channel.ClaimWait
	}
	if cfg.NodeRate == 0 {
		cfg.NodeRate, cfg.NodeBurst = 20, 40
	}
	if cfg.AddrRate == 0 {
		cfg.AddrRate, cfg.AddrBurst = 5, 20
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	s := &Server{
		cfg: cfg, store: cfg.Store, log: cfg.Log, now: cfg.Now,
		metrics:   cfg.Metrics,
		nodeLimit: newLimiter(cfg.NodeRate, cfg.NodeBurst),
		addrLimit: newLimiter(cfg.AddrRate, cfg.AddrBurst),
	}
	s.nodeLimit.refused = func() { cfg.Metrics.RateLimited(metrics.ScopeNode) }
	s.addrLimit.refused = func() { cfg.Metrics.RateLimited(metrics.ScopeAddress) }
	s.leases = lease.New(cfg.Store)
	return s
}

// Handler returns the plane's routes.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	if s.cfg.RouteCounts != nil {
		r.Use(s.cfg.RouteCounts.Count)
	}
	r.Post(channel.PathJoin, s.join)
	r.Post(channel.PathJoinStatus, s.joinStatus)
	r.Post(channel.PathClaim, s.signed(channel.MaxClaimCap, s.claim))
	r.Post(channel.PathResult, s.signed(channel.ResultCap, s.result))
	r.Post(channel.PathJobStatus, s.signed(channel.DefaultBodyCap, s.jobStatus))
	r.Post(channel.PathLeave, s.signed(channel.DefaultBodyCap, s.leave))
	r.Get(channel.PathArtifact, s.artifactRoute(s.signed(0, s.artifact)))
	r.Route("/api/v1/admin", s.adminRoutes)
	h, as := s.AdminAs()
	r.Mount(ui.Prefix, ui.New(ui.Config{Store: s.store, API: h, As: as, Tokens: s.cfg.Tokens, Releases: s.cfg.Releases, Rollouts: s.cfg.Rollouts,
		Joins: s.cfg.Joins, Nodes: s.cfg.Nodes, Jobs: s.cfg.Jobs, Log: s.log, Now: s.now}).Handler())
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := s.store.Ping(r.Context()); err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	r.Get("/readyz", s.readyz)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, notFound(r))
	})
	return r
}
