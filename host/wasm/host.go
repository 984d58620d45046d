// Package wasm runs words and recipes: WebAssembly modules whose bytes a verified statement pins. Each
// invocation gets a fresh instance with params on stdin, its result on stdout and a capped transcript
// on stderr; it has no files, environment or sockets, and reaches the machine only through the
// lexicon_v1 host module, whose every call is checked against the module's signed manifest and
// recorded.
//
//	h, err := wasm.New(ctx, wasm.Config{CacheDir: dir, CacheKeyFile: key})
//	defer h.Close()
//	mod, err := h.Load(ctx, m, wasmBytes, pinnedSHA256) // module.not_pinned, module.digest_mismatch
//	res := mod.Run(ctx, []byte(`{"unit": "nginx.service"}`))
//
// A binary using the default Process isolation must call ServeWorkerIfChild first thing in main (and
// tests in TestMain): the host runs words in copies of the binary it can kill at the deadline.
package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"log/slog"
	"runtime"
	"time"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/host/wasm/internal/caps"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// Fetcher gets artifacts from the plane's artifact route (artifact?sha256=<hex>), reading at most
// limit bytes; the agent's channel client is one.
type Fetcher = caps.Fetcher

// Isolation is where instances run.
type Isolation int

const (
	// Process runs invocations in worker processes, copies of this binary the host supervises, each
	// hosting the concurrent runs of one word: a worker is killed when a run in it passes its deadline,
	// so compiled code carries no deadline checks, and a crash of the engine costs a worker, never the
	// host. The runs of that word sharing the worker end with it (word.sibling_stopped); other words'
	// runs are in other workers. The binary must call ServeWorkerIfChild.
	Process Isolation = iota
	// InProcess runs instances in this process, with deadline checks compiled into every loop (about
	// twice the cost of a call). For tests and tools that cannot serve workers.
	InProcess
)

// Defaults for manifest limits left at zero.
const (
	DefaultMemoryMiB       = 64
	DefaultWallTime        = 10 * time.Second
	DefaultOutputBytes     = 256 << 10
	DefaultTranscriptBytes = 64 << 10
)

// DefaultWorkerIdle is how long an idle worker process is kept. Long enough for a burst of work (a
// rollout's preflight, change and verify words) to find it, short enough that a node doing nothing
// holds no worker: the next word after it pays a worker's start and a load from the compile cache.
const DefaultWorkerIdle = 10 * time.Second

// Config configures a Host. The zero value is valid: process isolation, no disk cache, no systemd.
type Config struct {
	// CacheDir holds compiled code; empty compiles every module in every new process.
	CacheDir string
	// CacheKeyFile is the 0600 file holding the key that seals cache entries (created if missing). It
	// must live outside CacheDir. Empty with a CacheDir uses a key that lives as long as the Host.
	CacheKeyFile string
	// Isolation says where instances run.
	Isolation Isolation
	// InterpretUncached runs a look word whose compiled code is not in the compile cache yet on
	// wazero's interpreter, while a background worker compiles it into the cache for its later runs: a
	// new node's first look answers in a fraction of a compile's time (a Go word's compile is about a
	// second on two cores). A look changes nothing, so one stopped at its deadline on the interpreter
	// is run again, compiled. It needs Process isolation and a CacheDir; a process that exits after one
	// run (warming would die with it) leaves it off.
	InterpretUncached bool
	// MaxWorkers bounds the worker processes (default 2), and so how many different words run at once:
	// a worker hosts the concurrent runs of one word only, up to 4 of them, so at most 4×MaxWorkers
	// invocations run at once. A worker costs ~33 MiB resident, each further run in it a few MiB.
	MaxWorkers int
	// WorkerIdle is how long an idle worker is kept, its compiled words ready (DefaultWorkerIdle);
	// after that it exits and gives its memory back.
	WorkerIdle time.Duration
	// Self lists the node's own names (host or host:port), what "@self" in a manifest stands for. They
	// come from the node's local configuration, never from a job.
	Self []string
	// Renewal is the node's certificate renewal program, what exec.pinned's "@renewal" runs; nil means
	// none (those calls answer capability.unknown). Like Self it comes from the node's policy.
	Renewal *manifest.NodeProgram
	// Systemd reaches the service manager; nil detects it (systemd.Detect).
	Systemd systemd.Manager
	// Packages reaches the package manager; nil detects it (pkgmgr.Detect).
	Packages pkgmgr.Manager
	// PackagePolicy is the node's own narrowing of the pkg.* capabilities (its policy's "packages");
	// nil narrows nothing beyond each word's manifest.
	PackagePolicy *manifest.NodePackages
	// Converge returns the node's bounds on the footprint capabilities (the "converge" section of its
	// policy); it is called once by each run that uses one, so a policy edited between two converges
	// holds for the second. nil lets them touch nothing. Like Self it comes from the node, never a job.
	Converge func() (*footprint.Bounds, error)
	// Artifacts fetches a footprint's files from the plane by digest (the channel's artifact route);
	// nil: artifact.fetch answers capability.unknown.
	Artifacts Fetcher
	// ConvergeDir is the folder where the footprint capabilities keep staged artifacts, the footprint
	// the node converged to and the firewall's last apply; "": they answer capability.unknown.
	ConvergeDir string
	// Reserved are folders no footprint capability writes beneath, whatever the bounds say: the agent's
	// own configuration and state folders.
	Reserved []string
	// RootCAs verify net.http's TLS servers; nil uses the system's.
	RootCAs *x509.CertPool
	// Logger receives the host's own events (cache rejections, worker deaths); nil discards them.
	Logger *slog.Logger
	// Backup is what the backup capabilities need from the node; nil answers backup.not_configured.
	Backup *BackupConfig
}

// BackupConfig is the node's side of backups: its owner's policy, and the folder (private to the
// agent) where the host keeps the node's backup key and the index of its last run to each target.
type BackupConfig struct {
	Policy *backup.Policy
	Dir    string
	// Segment and Parallel size uploads; zero takes backup/archive's defaults.
	Segment, Parallel int
}

// RunOptions are what the host holds for one run and never shows the word.
type RunOptions struct {
	// Grant is the job's backup grant (channel.Job.Grant): the requests the plane presigned for it.
	Grant *channel.BackupGrant
}

// Host loads and runs modules. It is safe for concurrent use.
type Host struct {
	cfg   Config
	env   *caps.Env
	eng   *engine     // InProcess
	pool  *workerPool // Process
	stats cacheCounters
	log   *slog.Logger
}

// New returns a host.
func New(ctx context.Context, cfg Config) (*Host, error) {
	h := &Host{cfg: cfg, log: cfg.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	sd := cfg.Systemd
	if sd == nil {
		sd = systemd.Detect()
	}
	pm := cfg.Packages
	if pm == nil {
		pm = pkgmgr.Detect()
	}
	h.env = &caps.Env{Self: append([]string(nil), cfg.Self...), Systemd: sd, RootCAs: cfg.RootCAs, Renewal: cfg.Renewal,
		Packages: pm, PackagePolicy: cfg.PackagePolicy,
		Converge: cfg.Converge, Artifacts: cfg.Artifacts, ConvergeDir: cfg.ConvergeDir, Reserved: append([]string(nil), cfg.Reserved...)}
	if b := cfg.Backup; b != nil {
		h.env.Backup = &caps.BackupEnv{Policy: b.Policy, Dir: b.Dir, Segment: b.Segment, Parallel: b.Parallel}
	}
	var key []byte
	if cfg.CacheDir != "" {
		var err error
		if cfg.CacheKeyFile != "" {
			key, err = LoadCacheKey(cfg.CacheKeyFile)
		} else {
			key, err = randomKey()
		}
		if err != nil {
			return nil, err
		}
	}
	switch cfg.Isolation {
	case InProcess:
		h.eng = &engine{stopInCode: true}
		if cfg.CacheDir != "" {
			c, err := openCompileCache(cfg.CacheDir, key)
			if err != nil {
				return nil, err
			}
			h.eng.cache = c
		}
	case Process:
		p, err := newWorkerPool(cfg, key, &h.stats, h.log)
		if err != nil {
			return nil, err
		}
		h.pool = p
		// A host is made to load words: its first worker starts now, while the caller reads and
		// verifies what it will load, rather than when the first Load needs it.
		p.prestart()
	default:
		return nil, errcode.New(errcode.UsageInvalid, "unknown isolation %d", cfg.Isolation)
	}
	return h, nil
}

// Close stops the host's workers. Modules loaded from it cannot run any more.
func (h *Host) Close() error {
	if h.pool != nil {
		h.pool.close()
	}
	return nil
}

// CacheStats reports what the compile cache did.
func (h *Host) CacheStats() CacheStats { return h.stats.stats() }

// Module is a loaded module, ready to run any number of times, concurrently.
type Module struct {
	h      *Host
	m      *manifest.Manifest
	digest string
	word   *caps.Word
	lim    limits
	inproc *compiled
	// interpret: a run may ready the module for the interpreter while it is not compiled in the cache
	// (Config.InterpretUncached, a look word).
	interpret bool
}

type limits struct {
	memory     uint64
	wall       time.Duration
	output     int
	transcript int
}

func limitsOf(m *manifest.Manifest) limits {
	l := limits{memory: DefaultMemoryMiB << 20, wall: DefaultWallTime, output: DefaultOutputBytes, transcript: DefaultTranscriptBytes}
	if m.Limits.MemoryMiB > 0 {
		l.memory = uint64(m.Limits.MemoryMiB) << 20
	}
	if m.Limits.WallTimeMS > 0 {
		l.wall = time.Duration(m.Limits.WallTimeMS) * time.Millisecond
	}
	if m.Limits.OutputBytes > 0 {
		l.output = int(m.Limits.OutputBytes)
	}
	if m.Limits.TranscriptBytes > 0 {
		l.transcript = int(m.Limits.TranscriptBytes)
	}
	return l
}

// Load readies the module m describes from its bytes. pinned is the sha256 a verified statement gives
// for them: without one the module is module.not_pinned, and bytes that hash otherwise (or a manifest
// naming other bytes) are module.digest_mismatch. The bytes compiled are exactly the bytes hashed.
// The host keeps the bytes for as long as the module is loaded; LoadFrom does not.
func (h *Host) Load(ctx context.Context, m *manifest.Manifest, module []byte, pinned string) (*Module, error) {
	return h.load(ctx, m, pinned, module, func() ([]byte, error) { return module, nil })
}

// LoadFrom is Load with the bytes read from source, which the host calls again whenever a new worker
// process needs them, rather than holding every loaded module in memory for workers that exit when
// idle. Every worker hashes the bytes it is sent against pinned before it compiles them, so a source
// that later gives other bytes makes runs fail (module.digest_mismatch), never run them.
func (h *Host) LoadFrom(ctx context.Context, m *manifest.Manifest, pinned string, source func() ([]byte, error)) (*Module, error) {
	if h.pool != nil {
		h.pool.prestart()
	}
	module, err := source()
	if err != nil {
		return nil, err
	}
	return h.load(ctx, m, pinned, module, source)
}

func (h *Host) load(ctx context.Context, m *manifest.Manifest, pinned string, module []byte, source func() ([]byte, error)) (*Module, error) {
	if m == nil {
		return nil, errcode.New(errcode.UsageInvalid, "Load needs a manifest")
	}
	if h.pool != nil {
		// The worker starts while the module is hashed and checked here.
		h.pool.prestart()
	}
	if pinned == "" || !cas.ValidDigest(pinned) {
		return nil, errcode.New(errcode.ModuleNotPinned, "%s: no verified statement pins these bytes", m.Name).With(errcode.DetailName, m.Name)
	}
	if m.Module.SHA256 != "" && m.Module.SHA256 != pinned {
		return nil, errcode.New(errcode.ModuleDigestMismatch, "%s: manifest names module %s, the statement pins %s", m.Name, m.Module.SHA256, pinned).
			With(errcode.DetailSHA256, pinned)
	}
	if h.eng != nil {
		// In process the bytes are hashed here, where they are compiled; a worker hashes the bytes it is
		// sent before it compiles them, so hashing them here as well would only delay its start.
		if err := checkDigest(m.Name, module, pinned); err != nil {
			return nil, err
		}
	}
	if m.Kind != manifest.KindWord && m.Kind != manifest.KindRecipe {
		return nil, errcode.New(errcode.WordModuleInvalid, "%s is a %s, not a word or recipe", m.Name, m.Kind)
	}
	word, err := caps.Prepare(m, h.env)
	if err != nil {
		return nil, err
	}
	mod := &Module{h: h, m: m, digest: pinned, word: word, lim: limitsOf(m),
		interpret: h.cfg.InterpretUncached && m.Kind == manifest.KindWord && m.Class == manifest.ClassLook}
	if h.eng != nil {
		c, err := h.eng.compile(foreground(ctx, runtime.GOMAXPROCS(0)), pinned, module, mod.lim.memory)
		if err != nil {
			return nil, err
		}
		h.stats.add(c.stats)
		mod.inproc = c
		return mod, nil
	}
	if err := h.pool.register(ctx, m.Name, pinned, module, source, mod.lim.memory, mod.interpret); err != nil {
		return nil, err
	}
	return mod, nil
}

// Warm puts the module in the compile cache if it is not there yet, without loading it, so that its
// first run later costs a load from the cache rather than a compile (seconds for a Go word). The agent
// warms its whole vocabulary when it accepts a statement. The bytes come from source and are checked
// against pinned as Load checks them; in process isolation a worker compiles them and keeps nothing.
func (h *Host) Warm(ctx context.Context, m *manifest.Manifest, pinned string, source func() ([]byte, error)) error {
	if m == nil || pinned == "" || !cas.ValidDigest(pinned) {
		return errcode.New(errcode.ModuleNotPinned, "no verified statement pins this module")
	}
	lim := limitsOf(m)
	if h.cfg.CacheDir == "" {
		return nil // nothing outlives the process: nothing to warm
	}
	if h.pool != nil {
		return h.pool.warm(ctx, m.Name, pinned, lim.memory, source)
	}
	if h.eng.cache.has(pinned, h.eng.variant()) {
		return nil
	}
	module, err := source()
	if err != nil {
		return err
	}
	if err := checkDigest(m.Name, module, pinned); err != nil {
		return err
	}
	c, err := h.eng.compile(ctx, pinned, module, lim.memory)
	if err != nil {
		return err
	}
	h.stats.add(c.stats)
	c.close()
	return nil
}

// Manifest returns the module's manifest.
func (mod *Module) Manifest() *manifest.Manifest { return mod.m }

// Digest returns the module's pinned sha256.
func (mod *Module) Digest() string { return mod.digest }

// Close releases the module's compiled code (in-process isolation). Workers release theirs when
// they exit.
func (mod *Module) Close() {
	if mod.inproc != nil {
		mod.inproc.close()
	}
}

// rawRun is what a runner learned about one run, before the host judges it.
type rawRun struct {
	runOutcome
	stdout, stderr       []byte
	stdoutOver, stdOverE bool
	memExceeded          bool
	killed               bool          // a worker killed at the deadline or on cancel
	hostErr              error         // the host, not the word, failed
	ctxErr               error         // why the word's own context ended, if it did
	took                 time.Duration // from the start of the word's instance to its end
}

// Run runs the module once with input as its params and returns the result envelope. Run never
// returns nil, and nothing a module does makes it panic.
func (mod *Module) Run(ctx context.Context, input []byte) *Result {
	return mod.RunWith(ctx, input, RunOptions{})
}

// RunWith is Run with what the host holds for this run alone (a job's backup grant).
func (mod *Module) RunWith(ctx context.Context, input []byte, opts RunOptions) *Result {
	res := &Result{Capabilities: []Call{}}
	if len(input) == 0 {
		input = []byte("{}")
	}
	if err := mod.m.CheckParams(input); err != nil {
		return res.fail(Refused, err)
	}
	d := mod.word.InvocationWith(opts.Grant)
	defer d.End()
	var raw rawRun
	if mod.inproc != nil {
		raw = mod.runInProcess(ctx, input, d)
	} else {
		raw = mod.h.pool.run(ctx, mod, input, d)
	}
	res.Capabilities = d.Calls()
	res.Transcript = truncateRunes(string(raw.stderr), len(raw.stderr))
	res.DurationMS = raw.took.Milliseconds()
	return mod.judge(res, raw)
}

// wordContext is the context the word runs under: its wall time starts when its instance is about to
// start, not while the host starts a worker or compiles.
func (mod *Module) wordContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, mod.lim.wall)
}

func (mod *Module) runInProcess(ctx context.Context, input []byte, d *caps.Dispatcher) rawRun {
	start := time.Now()
	ctx, cancel := mod.wordContext(ctx)
	defer cancel()
	inv := &invocation{
		name:   mod.m.Name,
		stdin:  input,
		stdout: &cappedBuffer{limit: mod.lim.output},
		stderr: &cappedBuffer{limit: mod.lim.transcript},
		caller: dispatchCaller{d},
	}
	out := mod.inproc.run(ctx, inv)
	return rawRun{
		took:        time.Since(start),
		ctxErr:      ctx.Err(),
		runOutcome:  out,
		stdout:      inv.stdout.buf.Bytes(),
		stderr:      inv.stderr.buf.Bytes(),
		stdoutOver:  inv.stdout.overflow,
		stdOverE:    inv.stderr.overflow,
		memExceeded: inv.memExceeded(),
	}
}

type dispatchCaller struct{ d *caps.Dispatcher }

func (c dispatchCaller) call(ctx context.Context, req []byte) []byte { return c.d.Call(ctx, req) }

// judge turns how a run ended into the result envelope.
func (mod *Module) judge(res *Result, raw rawRun) *Result {
	name, ctxErr := mod.m.Name, raw.ctxErr
	stopped := raw.killed || raw.trap != nil
	switch {
	case raw.hostErr != nil:
		return res.fail(Failed, raw.hostErr)
	case raw.memExceeded && !(raw.exited && raw.exitCode == 0):
		// A grow past the limit was refused and the word did not survive it.
		return res.fail(Failed, errcode.New(errcode.WordMemoryExceeded, "%s tried to use more than its %d MiB of memory", name, mod.lim.memory>>20).
			With(errcode.DetailLimitMiB, mod.lim.memory>>20))
	case stopped && ctxErr == context.DeadlineExceeded:
		return res.fail(Failed, errcode.New(errcode.WordDeadlineExceeded, "%s ran past its %s wall time and was stopped", name, mod.lim.wall).
			With(errcode.DetailLimitMS, mod.lim.wall.Milliseconds()))
	case stopped && ctxErr == context.Canceled:
		return res.fail(Failed, errcode.New(errcode.WordCancelled, "%s was cancelled", name))
	case raw.stdoutOver:
		return res.fail(Failed, errcode.New(errcode.WordOutputTooLarge, "%s wrote more than its %d-byte output cap", name, mod.lim.output).
			With(errcode.DetailLimitBytes, mod.lim.output))
	case raw.stdOverE:
		return res.fail(Failed, errcode.New(errcode.WordTranscriptTooLarge, "%s wrote more than its %d-byte transcript cap", name, mod.lim.transcript).
			With(errcode.DetailLimitBytes, mod.lim.transcript))
	case raw.trap != nil:
		msg := firstLine(raw.trap.Error())
		if p := panicLine(res.Transcript); p != "" {
			msg = p
		}
		return res.fail(Failed, errcode.New(errcode.WordCrashed, "%s crashed: %s", name, msg))
	case raw.exitCode != 0:
		if e, ok := wordFailure(raw.stdout); ok {
			res = res.fail(Failed, e)
			res.Output = failureOutput(mod.m, raw.stdout)
			return res
		}
		msg := panicLine(res.Transcript)
		if msg == "" {
			msg = "no reason given"
		}
		return res.fail(Failed, errcode.New(errcode.WordCrashed, "%s exited with status %d: %s", name, raw.exitCode, msg).
			With(errcode.DetailExitCode, raw.exitCode))
	}
	out := trimJSON(raw.stdout)
	if err := mod.m.CheckOutput(out); err != nil {
		return res.fail(Failed, err)
	}
	if !jsonValid(out) {
		return res.fail(Failed, errcode.New(errcode.WordOutputInvalid, "%s wrote no JSON result", name).With(errcode.DetailField, ""))
	}
	res.Outcome, res.Output = Completed, out
	return res
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

func randomKey() ([]byte, error) {
	k := make([]byte, CacheKeySize)
	if _, err := readRandom(k); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot make a compile-cache key")
	}
	return k, nil
}

func trimJSON(b []byte) []byte { return bytes.TrimSpace(b) }

func jsonValid(b []byte) bool { return len(b) > 0 && json.Valid(b) }

func readRandom(b []byte) (int, error) { return rand.Read(b) }
