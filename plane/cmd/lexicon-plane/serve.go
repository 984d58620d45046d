package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/incidents"
	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/server"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/internal/sweep"
	"github.com/lexicon-fleet/lexicon/plane/internal/tlsboot"
	"github.com/lexicon-fleet/lexicon/plane/internal/webhook"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// storeFlags are shared by every command that opens the store.
type storeFlags struct{ data, db string }

func (f *storeFlags) setup(fs *flag.FlagSet) {
	fs.StringVar(&f.data, "data", "/var/lib/lexicon-plane", "data folder: the SQLite store, TLS files, trust folder")
	fs.StringVar(&f.db, "db", "", "store URL: postgres://... for PostgreSQL; default SQLite in the data folder")
}

func (f *storeFlags) open(ctx context.Context) (store.Store, error) {
	if err := os.MkdirAll(f.data, 0o700); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create data folder %s", f.data)
	}
	url := f.db
	if url == "" {
		url = filepath.Join(f.data, "plane.db")
	}
	return open.URL(ctx, url)
}

type readyLine struct {
	URL           string `json:"url"`
	Listen        string `json:"listen"`
	CA            string `json:"ca,omitempty"`
	CAFingerprint string `json:"ca_fingerprint,omitempty"`
	Store         string `json:"store"`
}

func serveCmd() *cli.Command {
	var (
		sf                            storeFlags
		listen, cert, key, trust, ext string
		names, masterKey              string
		insecure                      bool
		claimWait                     time.Duration
		webhooks                      string
		reconcileEvery                time.Duration
		driverMaxTimeouts             int
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
			fs.StringVar(&webhooks, "webhooks", "", "JSON file of the webhooks incidents notify (mode 600: it holds their secrets)")
			fs.DurationVar(&reconcileEvery, "reconcile-every", 0, "how often the incident detectors run (default 30s)")
			fs.IntVar(&driverMaxTimeouts, "driver-max-timeouts", 3, "calls in a row that may time out before a driver process is restarted (negative: never)")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			log := slog.New(slog.NewJSONHandler(env.Stderr, nil))
			if driverMaxTimeouts == 0 { // goplugin reads 0 as its default; a plane asked for 0 would get 3
				return nil, cli.UsageError("--driver-max-timeouts must be at least 1, or negative for never")
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
			st, err := sf.open(ctx)
			if err != nil {
				return nil, err
			}
			defer st.Close()
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
			mgr, err := driverManager(sf.data, masterKey, st, log, goplugin.Options{MaxTimeouts: driverMaxTimeouts})
			if err != nil {
				return nil, err
			}
			bg, queued := background(st, log, hooks, reconcileEvery)
			srv := server.New(server.Config{Store: st, TrustDir: trust, Log: log, Base: base, ClaimWait: claimWait,
				WebhookNames: webhook.Names(hooks), NotificationsQueued: queued, Drivers: mgr})
			if len(hooks) > 0 {
				log.Info("incidents notify webhooks", "webhooks", webhook.Names(hooks))
			}
			httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
			ready := readyLine{Listen: ln.Addr().String(), Store: "sqlite"}
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
			if env.JSON {
				line, _ := json.Marshal(ready)
				fmt.Fprintln(env.Stdout, string(line))
			} else {
				fmt.Fprintf(env.Stdout, "lexicon-plane serving %s (store: %s)\n", ready.URL, ready.Store)
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
			go func() {
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
			log.Info("plane stopped")
			return nil, nil
		},
	}
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

// background is the plane's work beside its HTTP server: job expiry, the sweep of expired nonces and
// joins, the incident detectors and, when webhooks are configured, their delivery. Every replica runs
// all of it; each step is idempotent. queued wakes the delivery service (nil without webhooks).
func background(st store.Store, log *slog.Logger, hooks []webhook.Endpoint, reconcileEvery time.Duration) (bg services.Group, queued func()) {
	bg = services.Group{
		jobs.NewExpirer(jobs.Config{Store: st, Log: log}),
		sweep.New(sweep.Config{Store: st, Log: log}),
	}
	var deliver *webhook.Service
	if len(hooks) > 0 {
		deliver = webhook.NewService(&webhook.Deliverer{Store: st, Endpoints: hooks, Log: log}, 0)
		queued = deliver.Wake
	}
	bg = append(bg, incidents.NewReconciler(incidents.Config{Store: st, Log: log, Every: reconcileEvery,
		Webhooks: webhook.Names(hooks), Queued: queued}))
	if deliver != nil {
		bg = append(bg, deliver)
	}
	return bg, queued
}

// driverManager loads (or, on first start, makes) the master key and sets up the drivers, whose
// processes run with plugin.
func driverManager(data, keyFile string, st store.Store, log *slog.Logger, plugin goplugin.Options) (*drivers.Manager, error) {
	if keyFile == "" {
		keyFile = filepath.Join(data, "master.key")
	}
	_, statErr := os.Lstat(keyFile)
	key, err := seal.LoadOrCreate(keyFile)
	if err != nil {
		return nil, err
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		log.Warn("made a master key for driver credentials; back it up, and give every replica the same file",
			"file", keyFile, "key_id", key.ID())
	} else {
		log.Info("master key loaded", "file", keyFile, "key_id", key.ID())
	}
	return drivers.New(drivers.Config{Store: st, Dir: filepath.Join(data, "drivers"), Key: key, Log: log, Plugin: plugin})
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
