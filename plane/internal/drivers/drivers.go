// Package drivers runs the plane's drivers: only the ones an admin enabled, only from the digest the
// current release pins, one process per account holding that account's credential alone, and every call
// recorded in the audit log.
//
//	m, err := drivers.New(drivers.Config{Store: st, Dir: filepath.Join(data, "drivers"), Key: key})
//	go m.Run(ctx) // start what is enabled, follow releases and other replicas' changes
//	_, err = m.Enable(ctx, "alice", "dns-memory")
//	_, err = m.AccountAdd(ctx, "alice", drivers.AccountAddRequest{Driver: "dns-memory", Name: "lab", ...})
//	report, err := m.DNSReconcile(ctx, "alice", "lab", "example.com", records, false)
//
// What is enabled and which accounts exist live in the store, shared by every replica; the processes
// are each replica's own. Every call checks the store, so a driver disabled through one replica cannot
// be called through another, and Run brings the processes in line within SyncEvery.
package drivers

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what the driver manager reads and writes: which drivers are enabled, the accounts (with their
// sealed credentials), the audit log of calls, and the current release's driver executables.
type Store interface {
	DriverEnable(ctx context.Context, p store.DriverSetParams) (store.DriverState, error)
	DriverDisable(ctx context.Context, p store.DriverSetParams) (store.DriverState, error)
	DriverGet(ctx context.Context, p store.DriverGetParams) (store.DriverState, error)
	DriverList(ctx context.Context) ([]store.DriverState, error)
	AccountCreate(ctx context.Context, p store.AccountCreateParams) (store.Account, error)
	AccountGet(ctx context.Context, p store.AccountGetParams) (store.Account, error)
	AccountList(ctx context.Context, p store.AccountListParams) ([]store.Account, error)
	AccountRemove(ctx context.Context, p store.AccountRemoveParams) (store.Account, error)
	AccountSetTest(ctx context.Context, p store.AccountSetTestParams) (store.Account, error)
	DriverCallAdd(ctx context.Context, p store.DriverCallAddParams) (store.DriverCall, error)
	DriverCallStart(ctx context.Context, p store.DriverCallStartParams) (store.DriverCall, error)
	DriverCallFinish(ctx context.Context, p store.DriverCallFinishParams) (store.DriverCall, error)
	DriverCallList(ctx context.Context, p store.DriverCallListParams) (store.DriverCallListResult, error)
	ReleaseCurrent(ctx context.Context) (store.Release, error)
	ArtifactGet(ctx context.Context, p store.ArtifactGetParams) (store.Artifact, error)
}

// Config is what a Manager needs.
type Config struct {
	Store Store
	// Dir is the plane's local copy of driver executables, a content-addressed store (Dir/sha256/<hex>)
	// filled from the plane store by digest. go-plugin hashes each copy again before it runs.
	Dir string
	// Key seals and opens account credentials; every replica needs the same one.
	Key seal.Keyring
	Log *slog.Logger
	// Plugin tunes every driver process (timeouts, backoff); its Logger is set from Log.
	Plugin goplugin.Options
	// Platform is the os/arch of the drivers this plane runs (default: its own).
	Platform string
	// SyncEvery is how often Run brings processes in line with the store and the current release
	// (default 5s). CatalogTTL is how long a call may use the release's driver list before reading it
	// again (default 2s). RetryAfter is how long a driver that failed to start is left before a call or
	// Run tries again (default 30s); enabling it tries at once.
	SyncEvery, CatalogTTL, RetryAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Metrics counts the calls (nil: not counted).
	Metrics *metrics.Plane
}

// Manager runs drivers for one plane replica.
type Manager struct {
	cfg     Config
	store   Store
	log     *slog.Logger
	cas     *cas.Store
	replica string

	kick chan struct{}

	mu        sync.Mutex
	slots     map[string]*slot
	cat       *catalog
	catAt     time.Time
	manifests map[string]*manifest.Manifest
	closed    bool

	schemas sync.Map // executable digest -> its config schema (json.RawMessage)
}

// New makes a Manager; nothing starts until Run or a call needs it.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Key == nil || cfg.Dir == "" {
		return nil, errcode.New(errcode.UsageInvalid, "drivers need a store, a master key and a folder")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Platform == "" {
		cfg.Platform = runtime.GOOS + "/" + runtime.GOARCH
	}
	if cfg.SyncEvery <= 0 {
		cfg.SyncEvery = 5 * time.Second
	}
	if cfg.CatalogTTL <= 0 {
		cfg.CatalogTTL = 2 * time.Second
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Plugin.Logger = cfg.Log
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create driver folder %s", cfg.Dir)
	}
	c, err := cas.Open(cfg.Dir)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	return &Manager{
		cfg: cfg, store: cfg.Store, log: cfg.Log, cas: c, replica: host,
		kick: make(chan struct{}, 1), slots: map[string]*slot{}, manifests: map[string]*manifest.Manifest{},
	}, nil
}

// Run starts the enabled drivers, then keeps every process in line with the store and the current
// release until ctx ends: drivers enabled or re-pinned elsewhere start, drivers disabled, dropped by a
// release or re-pinned stop, processes of removed accounts stop. It stops every driver when it returns.
func (m *Manager) Run(ctx context.Context) {
	defer m.Close()
	t := time.NewTicker(m.cfg.SyncEvery)
	defer t.Stop()
	for {
		m.Sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.kick:
		}
	}
}

// ReleaseChanged tells the manager a release was published: the next call reads the release again and
// Run re-pins at once instead of at its next tick.
func (m *Manager) ReleaseChanged() {
	m.mu.Lock()
	m.cat = nil
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Sync brings this replica's processes in line with the store and the current release once. Each
// driver is decided under its lifecycle lock from its state read under that lock, so an enable or a
// disable in progress here is never undone by a decision made from an older read. Failures are logged
// and kept in Status; the next Sync tries again.
func (m *Manager) Sync(ctx context.Context) {
	cat, err := m.catalog(ctx, true)
	if err != nil {
		m.log.Warn("drivers: cannot read the current release", "err", err)
		return
	}
	states, err := m.store.DriverList(ctx)
	if err != nil {
		m.log.Warn("drivers: cannot read which drivers are enabled", "err", err)
		return
	}
	names := map[string]bool{}
	for _, st := range states {
		if _, pinned := cat.get(st.Name); st.Enabled && pinned {
			names[st.Name] = true
		}
	}
	for _, sl := range m.slotList() {
		names[sl.name] = true
	}
	for name := range names {
		sl, err := m.slotFor(name)
		if err != nil {
			return
		}
		sl.life.Lock()
		m.syncOne(ctx, cat, sl)
		sl.life.Unlock()
	}
}

// syncOne decides one driver; sl.life is held.
func (m *Manager) syncOne(ctx context.Context, cat *catalog, sl *slot) {
	st, err := m.store.DriverGet(ctx, store.DriverGetParams{Name: sl.name})
	if err != nil {
		m.log.Warn("drivers: cannot read a driver's state", "driver", sl.name, "err", err)
		return
	}
	e, pinned := cat.get(sl.name)
	switch {
	case !st.Enabled:
		m.stopSlot(sl, "disabled")
	case !pinned:
		m.stopSlot(sl, "no longer pinned by the current release")
	default:
		e.Unconfined = st.Unconfined
		if _, err := m.ensure(ctx, e, false); err == nil { // a failure is logged once per attempt and kept for Status
			m.reapAccounts(ctx, sl, e)
		}
	}
}

// Close stops every driver process of this replica. The manager refuses calls afterwards.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	for _, sl := range m.slotList() {
		m.stopSlot(sl, "plane stopping")
	}
}

func (m *Manager) slotList() []*slot {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*slot, 0, len(m.slots))
	for _, sl := range m.slots {
		out = append(out, sl)
	}
	return out
}
