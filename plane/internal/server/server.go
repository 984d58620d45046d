// Package server is the plane's HTTP surface: the agent channel (registry/channel) and the admin API
// (plane/api, whose route table it registers and whose types it answers with), on one chi router over
// the plane store. It serves requests only; the plane's background work (job expiry, sweeping, incident
// reconciling, webhook delivery) runs beside it as services (plane/internal/services).
package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/health"
	"github.com/lexicon-fleet/lexicon/plane/internal/logviews"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/ui"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
)

// Config is what a plane process needs.
type Config struct {
	Store store.Store
	// TrustDir verifies releases before they are published (statement_keys/, log_keys/, state).
	TrustDir string
	Log      *slog.Logger
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
	// Caps on pending joins overall and per source address.
	MaxPendingJoins, MaxPendingJoinsPerSource int
	// Drivers runs the plane's drivers; nil refuses the driver routes.
	Drivers *drivers.Manager

	// WebhookNames names the webhooks an incident notifies when a case a node reports opens or reopens
	// it (from lexicon-plane serve --webhooks); the delivery service sends them.
	WebhookNames []string
	// NotificationsQueued, when not nil, is called after a claim queued notifications: it wakes this
	// process's delivery service, so a notification need not wait for its tick.
	NotificationsQueued func()
	// RolloutsChanged, when not nil, is called after a rollout was started, resumed or otherwise moved:
	// it wakes this process's rollout engine.
	RolloutsChanged func()
	// Provision runs provisionings; nil refuses the provisioning routes (a plane without drivers).
	// Joins carrying a provisioning token are served either way.
	Provision *provision.Engine
	// ProvisionsChanged, when not nil, is called after a provisioning was started or a token join
	// recorded: it wakes this process's provisioning engine.
	ProvisionsChanged func()
	// MaxOpenCases caps a node's open cases; 0 means channel.MaxOpenCasesNode.
	MaxOpenCases int
	// Metrics is what this replica counts and serves on GET /api/v1/admin/metrics; nil makes a
	// registry of the server's own.
	Metrics *metrics.Plane

	// ReplicaID names this replica in GET /plane/status and /readyz.
	ReplicaID string
	// MasterKeyID is the id of the master key this replica loaded; "" means none, and /readyz says so.
	MasterKeyID string
	// RouteCounts, when not nil, counts every answer by route for plane:route_failing.
	RouteCounts *health.RouteCounts
	// LogViews fetches the consistency proofs nodes ask for from the logs the plane reads; nil
	// answers every such request with log.unavailable.
	LogViews *logviews.Views
}

// Server serves the agent channel and the admin API.
type Server struct {
	cfg       Config
	store     store.Store
	log       *slog.Logger
	now       func() time.Time
	nonces    httpsig.NonceStore
	metrics   *metrics.Plane
	nodeLimit *limiter
	addrLimit *limiter
	manifests *manifestIndex
	catalog   *rollouts.Catalog

	mu       sync.Mutex
	statRefs map[int64]channel.StatementRef // each release's statement as claims name it; releases never change
}

// New makes a server. Defaults: 20 requests/s per node (burst 40), 5/s per address (burst 20),
// 1,000 pending joins, 20 per address.
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
	if cfg.MaxPendingJoins == 0 {
		cfg.MaxPendingJoins, cfg.MaxPendingJoinsPerSource = 1000, 20
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	s := &Server{
		cfg: cfg, store: cfg.Store, log: cfg.Log, now: cfg.Now,
		nonces:    storeNonces{cfg.Store},
		metrics:   cfg.Metrics,
		nodeLimit: newLimiter(cfg.NodeRate, cfg.NodeBurst),
		addrLimit: newLimiter(cfg.AddrRate, cfg.AddrBurst),
	}
	s.nodeLimit.refused = func() { cfg.Metrics.RateLimited(metrics.ScopeNode) }
	s.addrLimit.refused = func() { cfg.Metrics.RateLimited(metrics.ScopeAddress) }
	s.manifests = newManifestIndex(cfg.Store)
	s.catalog = rollouts.NewCatalog(cfg.Store)
	s.statRefs = map[int64]channel.StatementRef{}
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
	r.Mount(ui.Prefix, ui.New(ui.Config{Store: s.store, API: h, As: as, HashToken: HashToken, Log: s.log, Now: s.now}).Handler())
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

// storeNonces adapts the store's nonce table to the verifier, so every replica sees every nonce.
type storeNonces struct{ s store.Store }

func (n storeNonces) NonceUse(ctx context.Context, keyID, nonce string, expires time.Time) (bool, error) {
	return n.s.NonceUse(ctx, store.NonceUseParams{KeyID: keyID, Nonce: nonce, ExpiresAt: expires})
}

var _ httpsig.NonceStore = storeNonces{}
