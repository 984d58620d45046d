package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane"
	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/plane/internal/backups"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/health"
	"github.com/lexicon-fleet/lexicon/plane/internal/incidents"
	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/logviews"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/retention"
	"github.com/lexicon-fleet/lexicon/plane/internal/roles"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/schedules"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/security"
	"github.com/lexicon-fleet/lexicon/plane/internal/server"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/internal/sso"
	"github.com/lexicon-fleet/lexicon/plane/internal/sweep"
	"github.com/lexicon-fleet/lexicon/plane/internal/tlsboot"
	"github.com/lexicon-fleet/lexicon/plane/internal/webhook"
	"github.com/lexicon-fleet/lexicon/plane/internal/wire"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// storeFlags are shared by every command that opens the store.
type storeFlags struct{ data, db string }

func (f *storeFlags) setup(fs *flag.FlagSet) {
	fs.StringVar(&f.data, "data", "/var/lib/lexicon-plane", "data folder: the SQLite store, TLS files, trust folder")
	fs.StringVar(&f.db, "db", "", "store URL: postgres://... for PostgreSQL; default SQLite in the data folder")
}

func (f *storeFlags) open(ctx context.Context, opts ...open.Option) (store.Store, error) {
	if err := os.MkdirAll(f.data, 0o700); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create data folder %s", f.data)
	}
	return open.URL(ctx, f.url(), opts...)
}

type readyLine struct {
	URL           string `json:"url"`
	Listen        string `json:"listen"`
	CA            string `json:"ca,omitempty"`
	CAFingerprint string `json:"ca_fingerprint,omitempty"`
	Store         string `json:"store"`
	Metrics       string `json:"metrics,omitempty"` // the --metrics-listen address, when asked
}

func serveCmd() *cli.Command {
	var (
		sf                            storeFlags
		listen, cert, key, trust, ext string
		names, masterKey              string
		insecure                      bool
		claimWait                     time.Duration
		webhooks, ssoFile             string
		reconcileEvery                time.Duration
		expiryLead                    time.Duration
		driverMaxTimeouts             int
		metricsListen                 string
		replicaID                     string
		memoryAlert                   float64
		heartbeatEvery                time.Duration
		rolloutEvery, leaseTTL        time.Duration
		backupEvery                   time.Duration
		provisionEvery                time.Duration
		provisionPolicy, provisionURL string
		provisionTimeouts             provision.Timeouts
		logURLs                       []string
		trustedProxies                []netip.Prefix
		criticalPackages              string
		criticalFixAge                time.Duration
		auditFile, auditWebhook       string
		retainAudit, retainCalls      time.Duration
		retainJobs, retainIncidents   time.Duration
	)
	return &cli.Command{
		Path: "serve", Args: "--listen ADDR --data DIR [--db URL]", MaxArgs: 0,
		Summary: "serve the agent channel and the admin API until interrupted",
		Setup: func(fs *flag.FlagSet) {
			sf.setup(fs)
			fs.StringVar(&listen, "listen", ":8443", "address to listen on")
			fs.StringVar(&cert, "tls-cert", "", "TLS certificate file; without it a local CA is minted in the data folder")
			fs.StringVar(&key, "tls-key", "", "TLS key file, with --tls-cert")
			fs.StringVar(&names, "tls-names", "", "comma-separated extra host names for the minted certificate")
			fs.BoolVar(&insecure, "insecure-http", false, "serve plain HTTP; allowed only on a loopback address")
			fs.StringVar(&trust, "trust", "", "trust folder that verifies published releases (default DATA/trust)")
			fs.StringVar(&ext, "external-url", "", "the URL agents use, when the plane sits behind a proxy")
			fs.DurationVar(&claimWait, "claim-wait", 0, "how long a claim is held without a job (default 25s)")
			fs.StringVar(&masterKey, "master-key", "", "file of the master key that seals driver credentials, made on first start (default DATA/master.key); every replica needs the same one")
			fs.StringVar(&ssoFile, "sso", "", "JSON file of the OpenID Connect provider people sign in with, and which of its groups get which role (mode 600: it holds the client secret); see docs/sso.md")
			fs.StringVar(&webhooks, "webhooks", "", "JSON file of the webhooks incidents notify (mode 600: it holds their secrets)")
			fs.DurationVar(&reconcileEvery, "reconcile-every", 0, "how often the incident detectors run (default 30s)")
			fs.DurationVar(&expiryLead, "release-expiry-lead", 0, "how long before the release the fleet is served expires an incident opens (default 336h, 14 days)")
			fs.DurationVar(&rolloutEvery, "rollout-every", 2*time.Second, "how often the rollout engine looks at running rollouts")
			fs.DurationVar(&backupEvery, "backup-every", 30*time.Second, "how often the backup schedule judges ended jobs and dispatches what is due")
			fs.DurationVar(&provisionEvery, "provision-every", 2*time.Second, "how often the provisioning engine looks at provisionings under way")
			fs.StringVar(&provisionURL, "provision-url", "", "the URL provisioned machines reach the plane at, when it differs from the one other agents use (default: --external-url, else the listen address)")
			fs.StringVar(&provisionPolicy, "provision-policy", "", "policy.json given to provisioned nodes (default: look and change words accepted, destructive refused)")
			fs.Func("provision-timeouts", "how long a provisioning may stay in a state, STATE=DURATION[,...] (creating, booting, installing, joining; defaults 15m, 10m, 20m, 1h)",
				func(v string) error { return provisionTimeouts.Set(v) })
			fs.DurationVar(&leaseTTL, "lease-ttl", 30*time.Second, "how long a lease this replica holds outlives it if it dies")
			fs.StringVar(&criticalPackages, "critical-packages", strings.Join(security.DefaultConfig().Critical, ","),
				"package name patterns (openssl, linux-image-*) whose waiting security fix makes a node red on the fleet security view (the packages a node serves by its roles are critical on it besides)")
			fs.DurationVar(&criticalFixAge, "critical-fix-age", security.DefaultConfig().FixAge, "how long a critical fix may wait before plane:critical_fix_waiting opens")
			fs.IntVar(&driverMaxTimeouts, "driver-max-timeouts", 3, "calls in a row that may time out before a driver process is restarted (negative: never)")
			fs.StringVar(&metricsListen, "metrics-listen", "", "also serve /metrics (Prometheus, no token) on this address, plain HTTP; keep it loopback or private")
			fs.StringVar(&replicaID, "replica-id", "", "this replica's name in the store, stable across its restarts (default HOSTNAME:PORT)")
			fs.Float64Var(&memoryAlert, "memory-alert", 0.8, "raise plane:memory when this replica's memory passes this share of its cgroup's or machine's limit (0: never)")
			fs.DurationVar(&heartbeatEvery, "heartbeat-every", 0, "how often this replica heartbeats into the store; silent for 6 times that, it is missing (default 10s)")
			fs.Func("trusted-proxy", "address or CIDR of a reverse proxy in front of the plane (repeatable): the web UI's sign-in counts failures per client by the X-Forwarded-For of requests from these, not per proxy",
				func(v string) error {
					p, err := parseProxy(v)
					if err != nil {
						return err
					}
					trustedProxies = append(trustedProxies, p)
					return nil
				})
			fs.StringVar(&auditFile, "audit-file", "", "also append every audit event to this file as a JSON line (made mode 600), for a SIEM to collect")
			fs.StringVar(&auditWebhook, "audit-webhook", "", "also POST every audit event to this http(s) URL as JSON lines (application/x-ndjson), in batches, retried while it fails")
			fs.DurationVar(&retainAudit, "retain-audit", retention.DefaultAuditAge, "keep audit events this long (at least 720h); one replica prunes older ones")
			fs.DurationVar(&retainCalls, "retain-driver-calls", retention.DefaultDriverCallAge, "keep driver-call records this long; one replica prunes older ones")
			fs.DurationVar(&retainJobs, "retain-jobs", retention.DefaultJobAge, "keep finished jobs (outputs, transcripts) and ended batches this long; one replica prunes older ones (jobs a rollout or a backup record names stay with it)")
			fs.DurationVar(&retainIncidents, "retain-incidents", retention.DefaultIncidentAge, "keep resolved or ignored, cleared incidents (events, notes) this long; one replica prunes older ones")
			fs.Func("log-url", "read URL of a transparency log whose key the trust folder holds (repeatable): nodes get consistency proofs from it, and the plane compares their views of it",
				func(v string) error {
					if u, err := url.Parse(v); err != nil || u.Host == "" {
						return fmt.Errorf("%q is not an absolute URL", v)
					}
					logURLs = append(logURLs, v)
					return nil
				})
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			log := slog.New(slog.NewJSONHandler(env.Stderr, nil))
			if driverMaxTimeouts == 0 { // goplugin reads 0 as its default; a plane asked for 0 would get 3
				return nil, cli.UsageError("--driver-max-timeouts must be at least 1, or negative for never")
			}
			if memoryAlert < 0 || memoryAlert > 1 || memoryAlert != memoryAlert {
				return nil, cli.UsageError("--memory-alert is a share of the memory limit, from 0 (never) to 1")
			}
			if heartbeatEvery < 0 {
				return nil, cli.UsageError("--heartbeat-every cannot be negative")
			}
			if expiryLead < 0 {
				return nil, cli.UsageError("--release-expiry-lead cannot be negative")
			}
			var ssoCfg *sso.Config
			if ssoFile != "" {
				c, err := sso.Load(ssoFile)
				if err != nil {
					return nil, err
				}
				ssoCfg = &c
			}
			var hooks []webhook.Endpoint
			if webhooks != "" {
				var err error
				if hooks, err = webhook.Load(webhooks); err != nil {
					return nil, err
				}
			}
			// Checked before listening, so a refused plain-HTTP address is never opened, even briefly.
			if insecure {
				if a, err := net.ResolveTCPAddr("tcp", listen); err != nil || !a.IP.IsLoopback() {
					return nil, cli.UsageError("--insecure-http is allowed only on a loopback address, not %s", listen)
				}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot listen on %s", listen)
			}
			defer ln.Close()
			host, _, _ := net.SplitHostPort(ln.Addr().String())
			m := metrics.New()
			st, err := sf.open(ctx, open.WithObserver(m))
			if err != nil {
				return nil, err
			}
			defer st.Close()
			m.CollectIncidents(st, 0)
			var metricsLn net.Listener
			if metricsListen != "" {
				if metricsLn, err = net.Listen("tcp", metricsListen); err != nil {
					return nil, errcode.Wrap(err, errcode.IOFailed, "cannot listen on %s for metrics", metricsListen)
				}
				defer metricsLn.Close()
				if a, ok := metricsLn.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() && !a.IP.IsPrivate() {
					log.Warn("metrics are served without a token on a public address; scrape them on a loopback or private one", "metrics_listen", metricsLn.Addr().String())
				}
			}
			stopStats := logStatements(st, log)
			defer stopStats()
			if trust == "" {
				trust = filepath.Join(sf.data, "trust")
			}
			var base *url.URL
			if ext != "" {
				if base, err = url.Parse(ext); err != nil || base.Host == "" {
					return nil, cli.UsageError("--external-url %q is not an absolute URL", ext)
				}
			}
			mgr, master, err := driverManager(sf.data, masterKey, st, log, goplugin.Options{MaxTimeouts: driverMaxTimeouts}, m)
			if err != nil {
				return nil, err
			}
			address := replicaAddress(ln.Addr())
			if replicaID == "" {
				replicaID = address
			}
			routes := health.NewRouteCounts(nil)
			pkgs, err := packageConfig(criticalPackages, criticalFixAge)
			if err != nil {
				return nil, err
			}
			bg, queued, beat := background(st, log, hooks, reconcileEvery, expiryLead, m, pkgs, health.Config{Store: st, ID: replicaID, Version: planeVersion(),
				Address: address, Every: heartbeatEvery, MemoryAlert: memoryAlert, Routes: routes, Log: log})
			rolloutSvc, rolloutEng := rolloutEngine(st, log, rolloutEvery, leaseTTL)
			scheduler := &schedules.Engine{Store: st, EngineBase: services.EngineBase{Holder: services.NewHolder(), Log: log, LeaseTTL: leaseTTL}}
			bg = append(bg, rolloutSvc, scheduler.Service(schedules.DefaultEvery))
			// The backups' schedule and witness; wire.New gives it its room before bg starts.
			backupEngine := &backups.Engine{Lease: st, EngineBase: services.EngineBase{Holder: services.NewHolder(), Log: log, LeaseTTL: leaseTTL}}
			bg = append(bg, backupEngine.Service(backupEvery))
			provisioner, provisionSvc, provisionsChanged := provisionEngine(st, mgr, log, provisionEvery, leaseTTL)
			provisioner.Timeouts = provisionTimeouts
			bg = append(bg, provisionSvc, (&provision.TransferWatch{Store: st, Cloud: provisioner.Cloud,
				EngineBase: services.EngineBase{Holder: provisioner.Holder, Log: log}}).Service(time.Hour))
			var views *logviews.Views
			if len(logURLs) > 0 {
				views = logviews.New(logviews.Config{Store: st, URLs: logURLs, Log: log, LogKeys: func() ([]keys.LogPublic, error) {
					t, err := registry.OpenTrust(trust)
					if err != nil {
						return nil, err
					}
					return t.LogKeys(), nil
				}})
				bg = append(bg, views)
			}
			pruner, err := retention.New(retention.Config{Store: st, AuditAge: retainAudit, DriverCallAge: retainCalls,
				JobAge: retainJobs, IncidentAge: retainIncidents, Log: log})
			if err != nil {
				return nil, err
			}
			bg = append(bg, pruner)
			exporters, auditSvc, err := auditExporters(auditFile, auditWebhook, log)
			if err != nil {
				return nil, err
			}
			if auditSvc != nil {
				bg = append(bg, auditSvc)
			}
			for _, x := range exporters {
				if c, ok := x.(io.Closer); ok {
					defer c.Close()
				}
			}
			var signOn *sso.SSO
			if ssoCfg != nil {
				if signOn, err = sso.New(ctx, *ssoCfg, nil); err != nil {
					return nil, err
				}
				log.Info("single sign-on", "issuer", ssoCfg.Issuer, "groups", len(ssoCfg.Roles))
			}
			srv := wire.New(wire.Config{Store: st, TrustDir: trust, Log: log, Base: base, ClaimWait: claimWait, LogViews: views,
				AuditExporters: exporters,
				WebhookNames:   webhook.Names(hooks), NotificationsQueued: queued, Drivers: mgr,
				Metrics: m, ReplicaID: replicaID, MasterKeyID: master.ID(), RouteCounts: routes, Rollouts: rolloutEng, Schedules: scheduler, Security: pkgs,
				Provision: provisioner, ProvisionsChanged: provisionsChanged, TrustedProxies: trustedProxies, SSO: signOn, Key: master,
				BackupEngine: backupEngine})
			log.Info("replica", "id", replicaID, "address", address, "memory_alert", memoryAlert)
			if len(trustedProxies) > 0 {
				log.Info("sign-ins through these proxies are counted per client", "trusted_proxies", trustedProxies)
			}
			if len(hooks) > 0 {
				log.Info("incidents notify webhooks", "webhooks", webhook.Names(hooks))
			}
			httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
				ConnContext: server.ConnContext}
			ready := readyLine{Listen: ln.Addr().String(), Store: "sqlite"}
			if metricsLn != nil {
				ready.Metrics = metricsLn.Addr().String()
				mux := http.NewServeMux()
				mux.Handle("GET /metrics", m.Handler())
				metricsSrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
				go func() { _ = metricsSrv.Serve(metricsLn) }()
				defer metricsSrv.Close()
			}
			if sf.db != "" {
				ready.Store = "postgres"
			}
			scheme := "http"
			if !insecure {
				scheme = "https"
				id, err := tlsIdentity(sf.data, cert, key, host, names)
				if err != nil {
					return nil, err
				}
				httpSrv.TLSConfig = id.Config
				ready.CA, ready.CAFingerprint = id.CAPath, id.CAFingerprint
				if id.Minted {
					log.Info("minted a local CA; give agents its file and fingerprint", "ca", id.CAPath, "fingerprint", id.CAFingerprint)
				}
			}
			ready.URL = scheme + "://" + ln.Addr().String()
			// What provisioned machines are given: set before the engine's first pass (bg.Start).
			planeURL := scheme + "://" + address
			if ext != "" {
				planeURL = ext
			}
			if provisionURL != "" {
				// Only what provisioned machines are told: requests are still verified against the
				// URL each agent dialled (or --external-url), so the plane's other agents are unaffected.
				if u, err := url.Parse(provisionURL); err != nil || u.Host == "" {
					return nil, cli.UsageError("--provision-url %q is not an absolute URL", provisionURL)
				}
				planeURL = provisionURL
			}
			if provisioner.Bootstrap, err = provisionBootstrap(planeURL, ready.CA, trust, provisionPolicy); err != nil {
				return nil, err
			}
			// A replica that says it is ready is already listed: its first heartbeat is in the store.
			beat.Beat(ctx)
			if env.JSON {
				line, _ := json.Marshal(ready)
				fmt.Fprintln(env.Stdout, string(line))
			} else {
				fmt.Fprintf(env.Stdout, "lexicon-plane serving %s (store: %s)\n", ready.URL, ready.Store)
				if ready.Metrics != "" {
					fmt.Fprintf(env.Stdout, "metrics http://%s/metrics\n", ready.Metrics)
				}
				if ready.CA != "" {
					fmt.Fprintf(env.Stdout, "CA %s\nCA fingerprint %s\n", ready.CA, ready.CAFingerprint)
				}
			}
			if f, ok := env.Stdout.(*os.File); ok {
				_ = f.Sync()
			}
			if err := bg.Start(ctx); err != nil {
				return nil, err
			}
			defer func() {
				// A step under way sees its context end; a store call that ignores it gets this long.
				stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if err := bg.Stop(stop); err != nil {
					log.Warn("background services did not stop", "err", err)
				}
			}()
			driversCtx, stopDrivers := context.WithCancel(ctx)
			driversDone := make(chan struct{})
			go func() {
				defer close(driversDone)
				mgr.Run(driversCtx) // starts the enabled drivers; stops them all when it returns
			}()
			defer func() { stopDrivers(); <-driversDone }()
			// Stopping: the long polls end without a job, and the requests under way (a claim that took a
			// job among them) finish and are answered before the store closes.
			httpSrv.RegisterOnShutdown(srv.Drain)
			shutDown := make(chan struct{})
			go func() {
				defer close(shutDown)
				<-ctx.Done()
				shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = httpSrv.Shutdown(shutdown)
			}()
			if scheme == "https" {
				err = httpSrv.ServeTLS(ln, "", "")
			} else {
				err = httpSrv.Serve(ln)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				return nil, errcode.Wrap(err, errcode.IOFailed, "serving stopped")
			}
			<-shutDown
			log.Info("plane stopped")
			return nil, nil
		},
	}
}

// auditExporters makes the exporters --audit-file and --audit-webhook ask for; the webhook's sender is
// a service of the replica's background group.
func auditExporters(file, hook string, log *slog.Logger) ([]audit.Exporter, services.Service, error) {
	var out []audit.Exporter
	var svc services.Service
	if file != "" {
		f, err := audit.OpenFile(file, log)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, f)
		log.Info("audit events exported to a file", "file", file)
	}
	if hook != "" {
		w, err := audit.NewWebhook(hook, nil, log)
		if err != nil {
			return nil, nil, cli.UsageError("--audit-webhook: %v", err)
		}
		out = append(out, w)
		svc = w
		log.Info("audit events exported to a webhook", "url", hook)
	}
	return out, svc, nil
}

// parseProxy reads a --trusted-proxy value: a CIDR, or one address (a prefix of its full length).
func parseProxy(v string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(v); err == nil {
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if p.IsValid() {
			return p.Masked(), nil
		}
	}
	if a, err := netip.ParseAddr(v); err == nil && a.Zone() == "" {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("%q is not an address or a CIDR", v)
}

// logStatements logs the store's statement counts each time the process gets SIGUSR1: the load
// harness reads them to report statements per job round trip (make bench). It returns the stop.
func logStatements(st store.Store, log *slog.Logger) (stop func()) {
	c, ok := st.(store.Counter)
	if !ok {
		return func() {}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sig:
				n := c.Statements()
				log.Info("store statements", "statements", n.Statements, "transactions", n.Transactions)
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(sig); close(done) }
}

// background is the plane's work beside its HTTP server: this replica's heartbeat, job expiry, the
// sweep of expired nonces and joins, the incident detectors and, when webhooks are configured, their
// delivery. Every replica runs all of it; each step is idempotent. queued wakes the delivery service
// (nil without webhooks). The heartbeat, also returned as beat, announces the names of the services
// this replica runs.
func background(st store.Store, log *slog.Logger, hooks []webhook.Endpoint, reconcileEvery, expiryLead time.Duration, m *metrics.Plane, pkgs security.Config, hb health.Config) (bg services.Group, queued func(), beat *health.Heartbeat) {
	bg = services.Group{
		jobs.NewExpirer(jobs.Config{Store: st, Log: log, Metrics: m}),
		sweep.New(sweep.Config{Store: st, Log: log}),
	}
	hb.Services = []string{"job expiry", "sweep", "incident reconciler", "drivers"}
	if len(hooks) > 0 {
		hb.Services = append(hb.Services, "webhook delivery")
	}
	beat = health.NewHeartbeat(hb)
	bg = append(services.Group{beat}, bg...)
	var deliver *webhook.Service
	if len(hooks) > 0 {
		deliver = webhook.NewService(&webhook.Deliverer{Store: st, Endpoints: hooks, Log: log, Metrics: m}, 0)
		queued = deliver.Wake
	}
	bg = append(bg, incidents.NewReconciler(incidents.Config{Store: st, Log: log, Every: reconcileEvery, ExpiryLead: expiryLead,
		Webhooks: webhook.Names(hooks), Queued: queued, Packages: pkgs.Thresholds(),
		// The list an admin set at run time stands in for the flag's, and what each node serves by its
		// roles is critical on it: the same room's reading the page uses (NodesServed reads the store alone).
		PackagesNow: security.NewRoom(security.RoomConfig{Store: st, Config: pkgs, Roles: roles.NewRoom(roles.RoomConfig{Store: st})}).Thresholds}))
	if deliver != nil {
		bg = append(bg, deliver)
	}
	return bg, queued, beat
}

// packageConfig is the fleet security view's settings from serve's flags; the package detectors judge
// by the same list and age, so the page and the incidents agree.
func packageConfig(critical string, fixAge time.Duration) (security.Config, error) {
	c := security.DefaultConfig()
	c.Critical = nil
	for _, p := range strings.Split(critical, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return c, cli.UsageError("--critical-packages: %q is not a pattern", p)
		}
		c.Critical = append(c.Critical, p)
	}
	if fixAge <= 0 {
		return c, cli.UsageError("--critical-fix-age must be positive")
	}
	c.FixAge = fixAge
	return c, nil
}

// rolloutEngine is the service that advances rollouts, under a holder name of its own, and the
// engine, which the rollouts room wakes and makes the first holder of what it starts.
func rolloutEngine(st store.Store, log *slog.Logger, every, ttl time.Duration) (services.Service, *rollouts.Engine) {
	e := &rollouts.Engine{Store: st, EngineBase: services.EngineBase{Holder: services.NewHolder(), Log: log, LeaseTTL: ttl}}
	log.Info("rollout engine ready", "holder", e.Holder)
	return e.Service(every), e
}

// provisionEngine is the service that advances provisionings through the drivers, under a holder
// name of its own, and the function that wakes it.
func provisionEngine(st store.Store, mgr *drivers.Manager, log *slog.Logger, every, ttl time.Duration) (*provision.Engine, services.Service, func()) {
	e := &provision.Engine{Store: st, Cloud: drivers.ProvisionCloud{M: mgr}, DNS: drivers.ProvisionDNS{M: mgr},
		EngineBase: services.EngineBase{Holder: services.NewHolder(), Log: log, LeaseTTL: ttl}}
	return e, e.Service(every), e.Wake
}

// provisionBootstrap is what every provisioned machine is given: the plane's URL and CA, the trust
// folder's publisher and log keys (never its state), and the node policy. All of it is public.
func provisionBootstrap(planeURL, caFile, trustDir, policyFile string) (provision.Bootstrap, error) {
	b := provision.Bootstrap{PlaneURL: planeURL, Trust: map[string]string{}}
	if caFile != "" {
		data, err := os.ReadFile(caFile)
		if err != nil {
			return b, errcode.Wrap(err, errcode.IOFailed, "cannot read the plane's CA %s", caFile)
		}
		b.CA = string(data)
	}
	for _, sub := range []string{"statement_keys", "log_keys"} {
		files, _ := filepath.Glob(filepath.Join(trustDir, sub, "*.pub"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return b, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", f)
			}
			b.Trust[sub+"/"+filepath.Base(f)] = string(data)
		}
	}
	// The witness policy is the fleet's too: a provisioned node requires the same cosignatures.
	if data, err := os.ReadFile(filepath.Join(trustDir, "witnesses")); err == nil {
		b.Trust["witnesses"] = string(data)
	}
	if policyFile != "" {
		data, err := os.ReadFile(policyFile)
		if err != nil {
			return b, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", policyFile)
		}
		b.Policy = string(data)
	}
	return b, nil
}

// driverManager loads (or, on first start, makes) the master key and sets up the drivers, whose
// processes run with plugin. It returns the key too: it seals single sign-on's refresh tokens and
// the backup targets' secrets, and /readyz reports its id.
func driverManager(data, keyFile string, st store.Store, log *slog.Logger, plugin goplugin.Options, pm *metrics.Plane) (*drivers.Manager, *seal.Ring, error) {
	keyFile = keyPath(data, keyFile)
	_, statErr := os.Lstat(keyFile)
	// A ring, not one key: it opens values under the key a rotation retires or brings in too, and
	// follows a rotation that `lexicon-plane key rotate` runs beside this replica.
	key, err := seal.OpenRing(keyFile)
	if err != nil {
		return nil, nil, err
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		log.Warn("made a master key for driver credentials; back it up, and give every replica the same file",
			"file", keyFile, "key_id", key.ID())
	} else {
		log.Info("master key loaded", "file", keyFile, "key_id", key.ID())
	}
	m, err := drivers.New(drivers.Config{Store: st, Dir: filepath.Join(data, "drivers"), Key: key, Log: log, Plugin: plugin, Metrics: pm})
	return m, key, err
}

// replicaAddress is where this replica listens, with the machine's name in place of an unspecified
// host (":8443" listens on every address; "web-3:8443" says which machine).
func replicaAddress(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}

// planeVersion is the version the Makefile stamped (plane.Version), else the module's version; a
// build from a checkout without a stamp is "dev", never Go's "(devel)". The commit follows when the
// build recorded one.
func planeVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(plane.Version, bi)
}

func versionOf(stamped string, bi *debug.BuildInfo) string {
	v := stamped
	if v == "" && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if v == "" {
		v = "dev"
	}
	if bi != nil {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
}

func tlsIdentity(data, cert, key, host, names string) (*tlsboot.Identity, error) {
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, cli.UsageError("--tls-cert and --tls-key go together")
		}
		return tlsboot.FromFiles(cert, key)
	}
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil {
		hosts = append(hosts, h)
	}
	if host != "" && !net.ParseIP(host).IsUnspecified() {
		hosts = append(hosts, host)
	}
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			hosts = append(hosts, n)
		}
	}
	return tlsboot.LocalCA(filepath.Join(data, "tls"), dedupe(hosts), time.Now())
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
