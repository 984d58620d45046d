// Package server is the plane's HTTP surface: it adapts the agent channel (registry/channel) and the
// admin API (plane/api, whose route table it registers) to the plane's rooms. Each handler decodes the
// request, authenticates and authorises it (a node's signature, an admin token's role from the route
// table, the rate limits), calls the room's Go API, and encodes the answer or the error envelope; the
// rules live in the rooms, and the server imports no store. The plane's background work (job expiry,
// sweeping, incident reconciling, webhook delivery, the engines) runs beside it as services.
package server

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/plane/internal/backups"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/health"
	"github.com/lexicon-fleet/lexicon/plane/internal/incidents"
	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/joins"
	"github.com/lexicon-fleet/lexicon/plane/internal/logviews"
	"github.com/lexicon-fleet/lexicon/plane/internal/machines"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/roles"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/schedules"
	"github.com/lexicon-fleet/lexicon/plane/internal/security"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/ui"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Config is the rooms the server adapts (plane/internal/wire makes them over one store) and what the
// HTTP surface itself needs.
type Config struct {
	Tokens    *tokens.Room
	Joins     *joins.Room
	Nodes     *nodes.Room
	Jobs      *jobs.Room
	Releases  *releases.Room
	Rollouts  *rollouts.Room
	Machines  *machines.Room
	Schedules *schedules.Room
	Security  *security.Room
	Roles     *roles.Room
	Incidents *incidents.Room
	Provision *provision.Room
	Drivers   *drivers.Room
	Health    *health.Room
	Backups   *backups.Room
	// Audit records every change of the admin API's table (and serves GET /audit).
	Audit *audit.Room
	// LogViews fetches the consistency proofs nodes ask for from the logs the plane reads; nil
	// answers every such request with log.unavailable.
	LogViews *logviews.Views
	// UI is the web UI, mounted at ui.Prefix; nil serves none.
	UI http.Handler
	// SSO is the single sign-on provider the CLI signs in with (GET api.SSOPath); nil when none.
	SSO interface{ Public() api.SSOInfo }

	Log *slog.Logger
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
	// Metrics counts what the HTTP surface refuses (rate limits, signatures) and serves GET
	// /api/v1/admin/metrics; nil makes a registry of the server's own.
	Metrics *metrics.Plane
	// RouteCounts, when not nil, counts every answer by route for plane:route_failing.
	RouteCounts *health.RouteCounts
}

// Server serves the agent channel and the admin API.
type Server struct {
	cfg       Config
	log       *slog.Logger
	now       func() time.Time
	metrics   *metrics.Plane
	nodeLimit *limiter
	addrLimit *limiter
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
		cfg: cfg, log: cfg.Log, now: cfg.Now, metrics: cfg.Metrics,
		nodeLimit: newLimiter(cfg.NodeRate, cfg.NodeBurst),
		addrLimit: newLimiter(cfg.AddrRate, cfg.AddrBurst),
	}
	s.nodeLimit.refused = func() { cfg.Metrics.RateLimited(metrics.ScopeNode) }
	s.addrLimit.refused = func() { cfg.Metrics.RateLimited(metrics.ScopeAddress) }
	return s
}

// Drain ends the agents' long polls without a job (jobs.Room.Drain); the plane calls it as its HTTP
// server starts to shut down, whose wait for requests under way then ends with them.
func (s *Server) Drain() { s.cfg.Jobs.Drain() }

// Handler returns the plane's routes.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	if s.cfg.RouteCounts != nil {
		r.Use(s.cfg.RouteCounts.Count)
	}
	r.Post(channel.PathJoin, s.join)
	r.Post(channel.PathJoinStatus, s.joinStatus)
	r.Post(channel.PathClaim, s.signed(channel.MaxClaimCap, s.claim))
	r.Post(channel.PathResult, s.signedResult(channel.ResultCap, s.result))
	r.Post(channel.PathJobStatus, s.signed(channel.DefaultBodyCap, s.jobStatus))
	r.Post(channel.PathLeave, s.signed(channel.DefaultBodyCap, s.leave))
	r.Get(channel.PathArtifact, s.artifactRoute(s.signed(0, s.artifact)))
	r.Route("/api/v1/admin", s.adminRoutes)
	if s.cfg.UI != nil {
		r.Mount(ui.Prefix, s.cfg.UI)
	}
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	spec := api.Spec()
	r.Get(api.SpecPath, func(w http.ResponseWriter, _ *http.Request) { // no token: it says what the API is, not what the plane holds
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(spec)
	})
	r.Get(api.SSOPath, func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.SSO == nil {
			s.writeError(w, r, errcode.New(errcode.SSOUnavailable, "this plane has no single sign-on; sign in with a token"))
			return
		}
		writeJSON(w, http.StatusOK, s.cfg.SSO.Public())
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, notFound(r))
	})
	r.MethodNotAllowed(s.methodNotAllowed(r))
	return r
}

// methodNotAllowed answers a path that mux routes with other methods only: the envelope, and the
// methods it does take in the Allow header and details.allow. Set on the root router, chi hands it
// to every router mounted below that has none of its own.
func (s *Server) methodNotAllowed(mux *chi.Mux) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.RawPath
		if path == "" {
			path = r.URL.Path
		}
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
			http.MethodDelete, http.MethodOptions} {
			if mux.Match(chi.NewRouteContext(), m, path) {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 { // a method chi does not know, on a path nothing serves
			s.writeError(w, r, notFound(r))
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, r, errcode.New(errcode.RouteMethodNotAllowed, "%s takes %s, not %s", r.URL.Path,
			strings.Join(allow, " or "), r.Method).With(errcode.DetailAllow, allow))
	}
}
