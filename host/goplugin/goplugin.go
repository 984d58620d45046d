// Package goplugin runs drivers for the plane as hashicorp/go-plugin subprocesses, started only from
// the content-addressed store by the sha256 a release pins, every call under a timeout, and restarted
// with backoff when they crash.
//
//	d, err := goplugin.Start(ctx, store, goplugin.Spec{Name: "dns-rfc2136", Kind: driver.KindDNS, Digest: pinned}, goplugin.Options{})
//	zones, err := d.DNS().ListZones(ctx)
//	d.Stop() // disable: the process ends, later calls fail with driver.disabled
//
// What runs is what was verified. The blob is read from the store, copied into a sealed memfd, hashed
// by go-plugin's SecureConfig through that memfd with a fresh sha256 hasher (module.digest_mismatch,
// before anything executes, when it is not the pinned digest), and executed through the same
// descriptor, so there is no path anyone can swap between the check and exec. The
// connection uses AutoMTLS and the contract version is negotiated with VersionedPlugins. The driver
// process gets no environment from the plane (Options.Env is all it sees), and its log lines reach the
// plane's log only after every credential the host gave it has been scrubbed.
//
// Linux only: sealed memfds and pidfds are Linux features.
package goplugin

import (
	"context"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Spec names the driver to run.
type Spec struct {
	// Name is the driver's name as the release knows it ("cloud-linode"); the process is called
	// lexicon-driver-<Name>.
	Name string
	// Kind is the contract the driver serves; the driver's Info must agree.
	Kind driver.Kind
	// Digest is the lowercase hex sha256 the current release pins for this driver's executable.
	Digest string
}

// Options tune a running driver. The zero value is usable.
type Options struct {
	// Logger receives the host's and the driver's log lines (default slog.Default()).
	Logger *slog.Logger
	// CallTimeout bounds every call, including waiting for a restart (default 30s).
	CallTimeout time.Duration
	// StartTimeout bounds one start, from exec to the handshake (default 10s).
	StartTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before restarting a crashed driver; it doubles with
	// each crash in a row and resets after a call succeeds (defaults 200ms and 30s).
	MinBackoff, MaxBackoff time.Duration
	// Env is the driver process's whole environment (KEY=value); the plane's own is never inherited.
	Env []string
	// MaxTimeouts is how many calls in a row may time out before the process is restarted (default
	// 3; negative: never). A driver stuck on every call answers nothing until it is.
	MaxTimeouts int
	// User is the account drivers run as when the plane runs as root ("" picks lexicon-driver if it
	// exists, else nobody).
	User string
	// NoLandlock leaves Landlock out even where the kernel offers it (for tests of the fallback).
	NoLandlock bool
	// Unconfined lets a driver start where no protection of the plane's files can be applied (not
	// root, no Landlock); without it Start refuses with driver.unconfined.
	Unconfined bool
	// Privileged runs the driver as the plane's own user without Landlock, for a driver whose manifest
	// says its work is this machine (the netns cloud needs root to make namespaces). Nothing confines
	// it, so Start refuses it with driver.unconfined unless Unconfined is set too.
	Privileged bool
	// SocketsDir is where each confined process gets its private socket folder (default os.TempDir()).
	SocketsDir string
	// OnRestart, when not nil, is called once for each process lost to a crash or to calls timing out
	// in a row, before its restart, with the cause's code (errcode.DriverCrashed or
	// errcode.DriverTimeout). It runs on the goroutine that restarts the driver: keep it short.
	OnRestart func(cause string)
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 200 * time.Millisecond
	}
	if o.MaxTimeouts == 0 {
		o.MaxTimeouts = 3
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(30*time.Second, o.MinBackoff)
	}
	return o
}

// State is where a driver is in its life.
type State string

const (
	StateRunning    State = "running"
	StateRestarting State = "restarting"
	StateDisabled   State = "disabled"
)

// Status is a driver's state for operators (`lexicon drivers status`).
type Status struct {
	State    State
	PID      int // 0 when no process runs
	Restarts int // restarts after crashes (or calls timing out in a row) since Start
	Timeouts int // calls that timed out in a row, since the last answer or restart
	// Protections lists what confines the process: user:<name>, landlock:v<abi>, no_new_privs, or
	// unconfined alone.
	Protections []string
	LastError   string // the last crash or failed restart, scrubbed
}

// Driver is one running driver: a process, restarted after crashes, until Stop.
type Driver struct {
	spec  Spec
	store *cas.Store
	opts  Options
	log   *slog.Logger
	scrub driver.Scrubber
	conf  confinement

	crashes  atomic.Int32 // crashes in a row, for the backoff
	timeouts atomic.Int32 // calls timed out in a row, for MaxTimeouts

	mu       sync.Mutex
	state    State
	cur      *instance     // nil while restarting or disabled
	ready    chan struct{} // closed when cur is set again or the driver is disabled
	config   *driver.Config
	restarts int
	lastErr  string
	stop     chan struct{} // closed by Stop
	bg       sync.WaitGroup
}

// Start verifies and starts the driver spec names from store. Errors: module.not_found and
// module.digest_mismatch (nothing was executed), driver.version_mismatch, driver.start_failed.
func Start(ctx context.Context, store *cas.Store, spec Spec, opts Options) (*Driver, error) {
	if spec.Kind != driver.KindCloud && spec.Kind != driver.KindDNS {
		return nil, errcode.New(errcode.UsageInvalid, "driver kind must be cloud or dns, not %q", spec.Kind)
	}
	if !nameRE.MatchString(spec.Name) {
		return nil, errcode.New(errcode.UsageInvalid, "driver name %q must be lowercase letters, digits, - and _ (at most 64)", spec.Name)
	}
	opts = opts.withDefaults()
	d := &Driver{
		spec: spec, store: store, opts: opts, state: StateRunning, stop: make(chan struct{}),
		log: opts.Logger.With(errcode.DetailDriver, spec.Name, "sha256", spec.Digest),
	}
	if opts.Privileged {
		d.conf = confinement{}
		if !opts.Unconfined {
			return nil, errcode.New(errcode.DriverUnconfined,
				"driver %s runs as the plane's own user without Landlock (its manifest says it is privileged: its work is this machine); enable it with --unconfined to accept that", spec.Name)
		}
	} else {
		d.conf = decideConfinement(opts.User, opts.NoLandlock)
	}
	if !d.conf.confined() && !opts.Unconfined {
		return nil, errcode.New(errcode.DriverUnconfined,
			"driver %s cannot be confined here: the plane is not root (no separate user) and the kernel offers no Landlock; it would read every account's credentials; enable it with --unconfined to accept that", spec.Name)
	}
	inst, err := d.launch(ctx)
	if err != nil {
		return nil, err
	}
	d.cur = inst
	d.watch(inst)
	return d, nil
}

// Status reports the driver's state.
func (d *Driver) Status() Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := Status{State: d.state, Restarts: d.restarts, Timeouts: int(d.timeouts.Load()), LastError: d.lastErr, Protections: d.conf.protections()}
	if d.cur != nil {
		s.PID = d.cur.pid
	}
	return s
}

// Stop disables the driver: its process is ended (gracefully, then killed) and every later call fails
// with driver.disabled. Calls in flight fail with driver.disabled too. Stop waits for the process and
// the host's goroutines to end; calling it again does nothing.
func (d *Driver) Stop() {
	d.mu.Lock()
	if d.state == StateDisabled {
		d.mu.Unlock()
		return
	}
	d.state = StateDisabled
	inst := d.cur
	d.cur = nil
	close(d.stop)
	if d.ready != nil {
		close(d.ready)
		d.ready = nil
	}
	d.mu.Unlock()
	if inst != nil {
		inst.kill()
	}
	d.bg.Wait()
	d.log.Info("driver disabled")
}

// watch restarts the driver when inst's process exits without Stop having asked for it.
func (d *Driver) watch(inst *instance) {
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		select {
		case <-inst.exited:
		case <-d.stop:
			return
		}
		if !d.markLost(inst) {
			return
		}
		n := d.crashes.Add(1)
		d.mu.Lock()
		cause := inst.lostTo
		d.mu.Unlock()
		if cause == "" {
			cause = errcode.DriverCrashed
		}
		d.log.Error("driver process exited; restarting", "pid", inst.pid, "crashes_in_a_row", n, "cause", cause)
		if d.opts.OnRestart != nil {
			d.opts.OnRestart(cause)
		}
		inst.kill() // reap and clean up go-plugin's side
		d.restart()
	}()
}

// markLost records that inst's process is gone, so that calls wait for the restart instead of using
// it. Whoever sees the exit first (the watcher or a call) makes the change; it reports whether inst was
// lost to a crash rather than to Stop.
func (d *Driver) markLost(inst *instance) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == StateDisabled {
		return false
	}
	if d.cur == inst {
		d.state, d.cur, d.ready = StateRestarting, nil, make(chan struct{})
		d.lastErr = "driver process exited"
		inst.lost = true
	}
	return inst.lost
}

// backoff is the wait before restart attempt n (1-based) in a row: MinBackoff doubling to MaxBackoff.
func (d *Driver) backoff(n int32) time.Duration {
	b := d.opts.MinBackoff
	for i := int32(1); i < n && b < d.opts.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, d.opts.MaxBackoff)
}

// restart starts a new process after a backoff, replaying the last config, and keeps trying with a
// growing backoff until it succeeds or the driver is stopped. It runs on the watch goroutine.
func (d *Driver) restart() {
	for {
		wait := time.NewTimer(d.backoff(d.crashes.Load()))
		select {
		case <-d.stop:
			wait.Stop()
			return
		case <-wait.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), d.opts.StartTimeout+d.opts.CallTimeout)
		inst, err := d.launch(ctx)
		if err == nil {
			err = d.replayConfig(ctx, inst)
			if err != nil {
				inst.kill()
			}
		}
		cancel()
		if err != nil {
			d.crashes.Add(1)
			d.mu.Lock()
			d.lastErr = d.scrub.Scrub(err.Error())
			d.mu.Unlock()
			d.log.Error("driver restart failed", "err", d.scrub.Scrub(err.Error()))
			continue
		}
		d.mu.Lock()
		if d.state == StateDisabled {
			d.mu.Unlock()
			inst.kill()
			return
		}
		d.state, d.cur = StateRunning, inst
		d.restarts++
		d.timeouts.Store(0)
		close(d.ready)
		d.ready = nil
		d.mu.Unlock()
		d.log.Info("driver restarted", "pid", inst.pid)
		d.watch(inst)
		return
	}
}

// replayConfig gives a restarted driver the account it had.
func (d *Driver) replayConfig(ctx context.Context, inst *instance) error {
	d.mu.Lock()
	cfg := d.config
	d.mu.Unlock()
	if cfg == nil {
		return nil
	}
	return inst.base.SetConfig(ctx, *cfg)
}
