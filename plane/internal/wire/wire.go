// Package wire assembles a plane process's HTTP surface over one store: it makes every room from the
// store and the process's settings and hands them to the HTTP server (plane/internal/server) and the web
// UI (plane/internal/ui). Beside plane/store and lexicon-plane serve, it is the only package that holds
// the whole store; each room takes only the methods it uses.
package wire

import (
	"context"
	"log/slog"
	"net/netip"
	"net/url"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/plane/internal/backups"
	"github.com/lexicon-fleet/lexicon/plane/internal/cases"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/health"
	"github.com/lexicon-fleet/lexicon/plane/internal/incidents"
	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/joins"
	"github.com/lexicon-fleet/lexicon/plane/internal/lease"
	"github.com/lexicon-fleet/lexicon/plane/internal/logviews"
	"github.com/lexicon-fleet/lexicon/plane/internal/machines"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/retention"
	"github.com/lexicon-fleet/lexicon/plane/internal/roles"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/schedules"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/security"
	"github.com/lexicon-fleet/lexicon/plane/internal/server"
	"github.com/lexicon-fleet/lexicon/plane/internal/sso"
	"github.com/lexicon-fleet/lexicon/plane/internal/sweep"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/internal/ui"
	"github.com/lexicon-fleet/lexicon/plane/internal/webhook"
	"github.com/lexicon-fleet/lexicon/plane/store"
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
	// Rollouts, when not nil, is this process's rollout engine: woken after a rollout was started,
	// resumed or otherwise moved, and the first holder of each rollout started here.
	Rollouts rollouts.Advancer
	// Security is what the fleet security view counts as critical and how long things may wait; zero
	// fields take security.DefaultConfig's.
	Security security.Config
	// Schedules fires the schedules; New gives it the jobs room to queue through. nil: the schedules
	// are served but nothing fires them in this process.
	Schedules *schedules.Engine
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
	// TrustedProxies are the reverse proxies whose X-Forwarded-For the web UI's sign-in believes, to
	// count failures per client (lexicon-plane serve --trusted-proxy).
	TrustedProxies []netip.Prefix
	// SSO signs people in through an OpenID Connect provider (lexicon-plane serve --sso); nil: tokens
	// only. Key seals the provider's refresh tokens that web UI sessions keep.
	SSO *sso.SSO
	Key seal.Keyring
	// BackupEngine, when not nil, is the process's backup schedule: New gives it the backups room.
	BackupEngine *backups.Engine
	// AuditExporters are sent every audit event as it is written (lexicon-plane serve --audit-file,
	// --audit-webhook); none keeps the trail in the store alone.
	AuditExporters []audit.Exporter
	// Bootstrap is what an install command gives a machine besides its token, when the plane has no
	// provisioning engine (whose Bootstrap is used otherwise, read when a command is made).
	Bootstrap *provision.Bootstrap
}

// New makes the plane's server over cfg.Store.
func New(cfg Config) *server.Server {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	st, log, now := cfg.Store, cfg.Log, cfg.Now
	catalog := releases.NewCatalog(st)
	rolls := rollouts.NewRoom(rollouts.RoomConfig{Store: st, Words: catalog, Log: log, Now: now, Engine: cfg.Rollouts})
	var published func()
	if cfg.Drivers != nil {
		published = cfg.Drivers.ReleaseChanged // re-pin drivers now, not at the next sync
	}
	rels := releases.New(releases.Config{Store: st, TrustDir: cfg.TrustDir, Log: log, Now: now, Catalog: catalog, Deployer: rolls, Published: published})
	leases := lease.New(st)
	cs := cases.New(cases.Config{Store: st, Log: log, Now: now, MaxOpen: cfg.MaxOpenCases, Webhooks: cfg.WebhookNames, Queued: cfg.NotificationsQueued})
	// The backups room queues jobs through the jobs room, which asks it for their grants at hand-out;
	// the nodes room hands it the jobs an ended pairing ends.
	var js *jobs.Room
	ns := nodes.New(nodes.Config{Store: st, Log: log, Now: now, Releases: rels, Leases: leases, Cases: cs, Jobs: lateJobs{&js}})
	bk := backups.New(backups.Config{Store: st, Key: cfg.Key, Nodes: ns, Log: log, Now: now, Jobs: lateJobs{&js}})
	js = jobs.NewRoom(jobs.RoomConfig{Store: st, Log: log, Now: now, Nodes: ns, Manifests: catalog, Leases: leases, Metrics: cfg.Metrics,
		Grants: bk})
	if cfg.BackupEngine != nil {
		cfg.BackupEngine.Room = bk
	}
	wake := func() {}
	if cfg.Schedules != nil {
		cfg.Schedules.Jobs, wake = js, cfg.Schedules.Wake
	}
	// The security view asks the roles room what each node serves.
	rs := roles.NewRoom(roles.RoomConfig{Store: st, Nodes: ns, Jobs: js, Rollouts: rolls, Log: log, Now: now})
	rooms := server.Config{
		Tokens:   tokens.New(tokens.Config{Store: st, Log: log, Now: now, SSO: idTokens(cfg.SSO)}),
		Releases: rels,
		Rollouts: rolls,
		Roles:    rs,
		Joins: joins.New(joins.Config{Store: st, Log: log, Now: now, MaxPending: cfg.MaxPendingJoins, MaxPendingPerSource: cfg.MaxPendingJoinsPerSource,
			Provisioned: cfg.ProvisionsChanged}),
		Nodes:     ns,
		Jobs:      js,
		Security:  security.NewRoom(security.RoomConfig{Store: st, Config: cfg.Security, Roles: rs, Now: now}),
		Schedules: schedules.New(schedules.Config{Store: st, Words: catalog, Log: log, Now: now, Wake: wake}),
		Incidents: incidents.NewRoom(incidents.RoomConfig{Store: st, Nodes: ns, Log: log, Now: now}),
		Provision: provision.NewRoom(provision.RoomConfig{Store: st, Engine: cfg.Provision, Nodes: ns, Releases: rels, Log: log, Now: now,
			Changed: cfg.ProvisionsChanged, Bootstrap: bootstrap(cfg)}),
		Drivers: drivers.NewRoom(cfg.Drivers, log),
		Backups: bk,
		Health:  health.NewRoom(health.RoomConfig{Store: st, ReplicaID: cfg.ReplicaID, MasterKeyID: cfg.MasterKeyID, Log: log, Now: now}),
		Audit:   audit.New(audit.Config{Store: st, Log: log, Now: now, Exporters: cfg.AuditExporters}),
	}
	rooms.Machines = machines.New(machines.Config{Store: st, Clouds: rooms.Drivers, Log: log, Now: now})
	rooms.UI = ui.New(ui.Config{Store: st, Tokens: rooms.Tokens, Joins: rooms.Joins, Nodes: rooms.Nodes, Jobs: rooms.Jobs,
		Releases: rooms.Releases, Rollouts: rooms.Rollouts, Schedules: rooms.Schedules, Security: rooms.Security, Roles: rooms.Roles, Incidents: rooms.Incidents, Provision: rooms.Provision,
		Drivers: rooms.Drivers, Health: rooms.Health, Machines: rooms.Machines, Backups: bk, Audit: rooms.Audit, Log: log, Now: now, TrustedProxies: cfg.TrustedProxies, Base: cfg.Base,
		SSO: ui.SSO{Provider: cfg.SSO, Store: st, Key: cfg.Key}}).Handler()
	if cfg.SSO != nil {
		rooms.SSO = cfg.SSO
	}
	rooms.Log, rooms.Base, rooms.Now, rooms.ClaimWait = log, cfg.Base, now, cfg.ClaimWait
	rooms.NodeRate, rooms.AddrRate, rooms.NodeBurst, rooms.AddrBurst = cfg.NodeRate, cfg.AddrRate, cfg.NodeBurst, cfg.AddrBurst
	rooms.Metrics, rooms.RouteCounts, rooms.LogViews = cfg.Metrics, cfg.RouteCounts, cfg.LogViews
	return server.New(rooms)
}

// idTokens is the provider as the tokens room takes it: a nil *sso.SSO must be a nil interface.
func idTokens(s *sso.SSO) tokens.IDTokenVerifier {
	if s == nil {
		return nil
	}
	return s
}

// lateJobs is the jobs room as the backups and nodes rooms take it, made after them: the jobs room asks
// the backups room for grants and the nodes room for nodes, so each is given the other once both exist.
type lateJobs struct{ r **jobs.Room }

func (l lateJobs) CreateBackup(ctx context.Context, who api.Token, req api.JobRequest, b store.BackupJob) (api.Job, error) {
	return (*l.r).CreateBackup(ctx, who, req, b)
}

func (l lateJobs) Ended(ctx context.Context, ended ...store.Job) { (*l.r).Ended(ctx, ended...) }

// bootstrap reads what an install command gives a machine: the provisioning engine's (set once the
// plane knows its URL and CA), else the configuration's; nil when neither is there.
func bootstrap(cfg Config) func() provision.Bootstrap {
	switch {
	case cfg.Provision != nil:
		return func() provision.Bootstrap { return cfg.Provision.Bootstrap }
	case cfg.Bootstrap != nil:
		b := *cfg.Bootstrap
		return func() provision.Bootstrap { return b }
	}
	return nil
}

// store.Store is the union of what every room and service of the plane declares it uses; these say so
// in one place, so a method a room needs and the store lacks fails to build here first.
var (
	_ tokens.Store             = store.Store(nil)
	_ joins.Store              = store.Store(nil)
	_ nodes.Store              = store.Store(nil)
	_ jobs.Store               = store.Store(nil)
	_ jobs.ExpiryStore         = store.Store(nil)
	_ lease.Store              = store.Store(nil)
	_ cases.Store              = store.Store(nil)
	_ releases.Store           = store.Store(nil)
	_ rollouts.Store           = store.Store(nil)
	_ machines.Store           = store.Store(nil)
	_ rollouts.EngineStore     = store.Store(nil)
	_ schedules.Store          = store.Store(nil)
	_ schedules.EngineStore    = store.Store(nil)
	_ security.Store           = store.Store(nil)
	_ roles.Store              = store.Store(nil)
	_ incidents.Store          = store.Store(nil)
	_ incidents.ReconcileStore = store.Store(nil)
	_ provision.RoomStore      = store.Store(nil)
	_ provision.EngineStore    = store.Store(nil)
	_ provision.TransferStore  = store.Store(nil)
	_ drivers.Store            = store.Store(nil)
	_ health.RoomStore         = store.Store(nil)
	_ health.HeartbeatStore    = store.Store(nil)
	_ ui.Store                 = store.Store(nil)
	_ ui.SSOStore              = store.Store(nil)
	_ sweep.Store              = store.Store(nil)
	_ webhook.Store            = store.Store(nil)
	_ metrics.IncidentCounter  = store.Store(nil)
	_ logviews.Store           = store.Store(nil)
	_ backups.Store            = store.Store(nil)
	_ backups.EngineStore      = store.Store(nil)
	_ audit.Store              = store.Store(nil)
	_ retention.Store          = store.Store(nil)
)
