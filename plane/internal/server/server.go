// Package server is the plane's HTTP surface: the agent channel (registry/channel) and the admin API
// (plane/api, whose route table it registers and whose types it answers with), on one chi router over
// the plane store.
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
	"github.com/lexicon-fleet/lexicon/plane/internal/webhook"
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
	// of it and all of it); 0 means channel.ClaimWait.
	ClaimWait time.Duration
	// Limits of requests per second (and bursts) per proven node and per source address.
	NodeRate, AddrRate   float64
	NodeBurst, AddrBurst int
	// Caps on pending joins overall and per source address.
	MaxPendingJoins, MaxPendingJoinsPerSource int
	// Drivers runs the plane's drivers; nil refuses the driver routes.
	Drivers *drivers.Manager

	// Webhooks are notified when an incident opens or reopens (from lexicon-plane serve --webhooks).
	Webhooks []webhook.Endpoint
	// WebhookClient sends the notifications; nil means one with webhook.DefaultTimeout.
	WebhookClient *http.Client
	// ReconcileEvery is how often the detectors run; 0 means 30 s.
	ReconcileEvery time.Duration
	// Detector settings; 0 means the store's defaults (10 minutes; more than 5 refusals in an hour).
	SilentAfter      time.Duration
	RefusalThreshold int
	// MaxOpenCases caps a node's open cases; 0 means channel.MaxOpenCasesNode.
	MaxOpenCases int
}

// Server serves the agent channel and the admin API.
type Server struct {
	cfg       Config
	store     store.Store
	log       *slog.Logger
	now       func() time.Time
	nonces    httpsig.NonceStore
	nodeLimit *limiter
	addrLimit *limiter
	manifests *manifestIndex

	// up is when this process started: the silence detector counts from it.
	up        time.Time
	hookNames []string
	deliverer *webhook.Deliverer
	kick      chan struct{} // wakes the deliverer when this process queued notifications

	mu      sync.Mutex
	current channel.StatementRef // the newest release, cached
	fetched time.Time
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
	if cfg.ReconcileEvery == 0 {
		cfg.ReconcileEvery = 30 * time.Second
	}
	s := &Server{
		cfg: cfg, store: cfg.Store, log: cfg.Log, now: cfg.Now,
		nonces:    storeNonces{cfg.Store},
		nodeLimit: newLimiter(cfg.NodeRate, cfg.NodeBurst),
		addrLimit: newLimiter(cfg.AddrRate, cfg.AddrBurst),
		up:        cfg.Now(),
		hookNames: webhook.Names(cfg.Webhooks),
		kick:      make(chan struct{}, 1),
	}
	s.deliverer = &webhook.Deliverer{Store: cfg.Store, Endpoints: cfg.Webhooks, Client: cfg.WebhookClient, Now: cfg.Now, Log: cfg.Log}
	s.manifests = newManifestIndex(cfg.Store)
	return s
}

// Handler returns the plane's routes.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Post(channel.PathJoin, s.join)
	r.Post(channel.PathJoinStatus, s.joinStatus)
	r.Post(channel.PathClaim, s.signed(channel.MaxClaimCap, s.claim))
	r.Post(channel.PathResult, s.signed(channel.ResultCap, s.result))
	r.Post(channel.PathJobStatus, s.signed(channel.DefaultBodyCap, s.jobStatus))
	r.Post(channel.PathLeave, s.signed(channel.DefaultBodyCap, s.leave))
	r.Get(channel.PathArtifact, s.signed(0, s.artifact))
	r.Route("/api/v1/admin", s.adminRoutes)
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := s.store.Ping(r.Context()); err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, notFound(r))
	})
	return r
}

// Run does the plane's housekeeping until ctx ends: running jobs past their budget become lost,
// expired nonces and joins are swept, the incident detectors run, and due notifications are sent. Every
// replica runs it; each step is idempotent.
func (s *Server) Run(ctx context.Context) {
	jobs := time.NewTicker(5 * time.Second)
	sweep := time.NewTicker(time.Minute)
	reconcile := time.NewTicker(s.cfg.ReconcileEvery)
	defer jobs.Stop()
	defer sweep.Stop()
	defer reconcile.Stop()
	if len(s.cfg.Webhooks) > 0 {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			s.deliverer.Run(ctx, s.kick, 5*time.Second)
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-reconcile.C:
			s.ReconcileIncidents(ctx)
		case <-jobs.C:
			s.ExpireJobs(ctx)
		case <-sweep.C:
			now := s.now()
			if n, err := s.store.NoncePurge(ctx, store.NoncePurgeParams{Now: now}); err != nil {
				s.log.Warn("nonce purge failed", "err", err)
			} else if n > 0 {
				s.log.Debug("nonces purged", "count", n)
			}
			if _, err := s.store.JoinExpire(ctx, store.JoinExpireParams{Now: now}); err != nil {
				s.log.Warn("join expiry failed", "err", err)
			}
		}
	}
}

// ExpireJobs makes running jobs past their budget lost.
func (s *Server) ExpireJobs(ctx context.Context) {
	lost, err := s.store.JobExpire(ctx, store.JobExpireParams{Now: s.now()})
	if err != nil {
		s.log.Warn("job expiry failed", "err", err)
		return
	}
	for _, j := range lost {
		s.log.Warn("job lost: past its claim budget", "job", j.ID, "node", j.NodeID, "word", j.Word)
	}
}

// storeNonces adapts the store's nonce table to the verifier, so every replica sees every nonce.
type storeNonces struct{ s store.Store }

func (n storeNonces) NonceUse(ctx context.Context, keyID, nonce string, expires time.Time) (bool, error) {
	return n.s.NonceUse(ctx, store.NonceUseParams{KeyID: keyID, Nonce: nonce, ExpiresAt: expires})
}

var _ httpsig.NonceStore = storeNonces{}
