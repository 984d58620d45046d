package wasm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/host/wasm/internal/caps"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Worker processes, the host's side: the pool that starts, hands out, feeds and kills the workers
// worker_child.go serves.

// loadTimeout bounds compiling one module in a worker (a cold compile of a large word takes seconds).
const loadTimeout = 5 * time.Minute

// runsPerWorker bounds the concurrent runs one worker hosts. They are all runs of one word (one
// loadKey): a second concurrent run of a word is an instance in the worker already holding its
// compiled code, not a process of its own. A runaway's kill at its deadline ends the others with it
// (word.sibling_stopped), so the bound also bounds what one runaway can take down.
const runsPerWorker = 4

// workerPool is the host's side: it starts, hands out and kills workers.
type workerPool struct {
	key        []byte
	cacheDir   string
	idleFor    time.Duration
	stats      *cacheCounters
	log        *slog.Logger
	maxWorkers int

	mu       sync.Mutex
	idle     []*worker        // live workers running nothing, oldest first
	live     map[*worker]bool // workers counted against maxWorkers
	spawning int              // workers acquire is starting, counted against maxWorkers too
	changed  chan struct{}    // closed and replaced when a worker frees a run or goes away
	modules  map[string]registered
	closed   bool
	starting chan struct{} // closed when the worker prestart is starting is ready; nil if none is
	warming  *worker       // the background worker warm is using, if any
	warmMu   sync.Mutex    // one warm at a time
}

// registered is a loaded module as the pool knows it. The pool keeps no bytes: a worker that needs the
// module gets them from source, and hashes them against digest before it compiles them. Words sharing
// a module share its registration, so it holds no word's name: each load and run names its own.
type registered struct {
	digest string
	memory uint64
	source func() ([]byte, error)
}

func newWorkerPool(cfg Config, key []byte, stats *cacheCounters, log *slog.Logger) (*workerPool, error) {
	if os.Getenv(workerEnv) == "1" {
		// Started as a worker but running a host: the binary does not call ServeWorkerIfChild, and a
		// pool here would start workers of workers.
		return nil, errcode.New(errcode.WordHostFailed, "this process was started as a wasm worker; the binary must call wasm.ServeWorkerIfChild first")
	}
	n := cfg.MaxWorkers
	if n <= 0 {
		n = 2
	}
	idle := cfg.WorkerIdle
	if idle <= 0 {
		idle = DefaultWorkerIdle
	}
	return &workerPool{key: key, cacheDir: cfg.CacheDir, idleFor: idle, stats: stats, log: log, maxWorkers: n,
		changed: make(chan struct{}), live: map[*worker]bool{}, modules: map[string]registered{}}, nil
}

// worker is one worker process.
type worker struct {
	cmd    *exec.Cmd
	toW    io.Closer
	exited chan struct{}
	stop   chan struct{} // closed by kill
	gone   chan struct{} // closed when the worker's pipe has ended: every frame it sent is delivered
	once   sync.Once

	sendMu sync.Mutex // concurrent runs write frames
	w      *bufio.Writer

	loadMu   sync.Mutex  // one load at a time; a run that finds one under way waits for it
	loadedCh chan *frame // the answer to the load under way

	// Under the pool's mu.
	loaded map[string]bool
	// interpreted is the word this worker readied its module for on the interpreter, if it did: it
	// serves that word alone, and exits once a run has ended in it (retire).
	interpreted string
	retire      bool
	key         string // the module its runs are runs of, while it has any
	word        string // and the word: twins on one module do not share a worker's runs
	active      int    // runs it hosts now
	dead        bool
	idle        *time.Timer // while idle: ends the worker when it has been idle too long

	mu      sync.Mutex
	runs    map[uint64]chan *frame // the runs waiting for frames, by id
	lastID  uint64
	stopped string // why the host killed it while it ran words (deadline, cancel), for the other runs
}

func (p *workerPool) spawn() (*worker, error) { return p.spawnWorker(false) }

// spawnWorker starts a worker; a background one runs in its own process group at the lowest CPU
// priority, so that compiling ahead never slows the words that run now.
func (p *workerPool) spawnWorker(background bool) (*worker, error) {
	toChildR, toChildW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fromChildR, fromChildW, err := os.Pipe()
	if err != nil {
		toChildR.Close()
		toChildW.Close()
		return nil, err
	}
	// A module is megabytes; at the default 64 KiB a pipe takes one context switch per 64 KiB to carry
	// it, which on a VM costs tens of milliseconds of a first call.
	growPipe(toChildW)
	growPipe(fromChildW)
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"lexicon-wasm-worker"}
	cmd.Env = []string{workerEnv + "=1"}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{toChildR, fromChildW}
	cmd.Stderr = os.Stderr
	if background {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	err = cmd.Start()
	if err == nil && background {
		// Nice applies per thread on Linux; PRIO_PGRP reaches every thread of the group, and threads
		// the worker starts later inherit it.
		_ = syscall.Setpriority(syscall.PRIO_PGRP, cmd.Process.Pid, 19)
	}
	toChildR.Close()
	fromChildW.Close()
	if err != nil {
		toChildW.Close()
		fromChildR.Close()
		return nil, err
	}
	wk := &worker{cmd: cmd, w: bufio.NewWriterSize(toChildW, 64<<10), toW: toChildW,
		loadedCh: make(chan *frame, 1), loaded: map[string]bool{}, runs: map[uint64]chan *frame{},
		exited: make(chan struct{}), stop: make(chan struct{}), gone: make(chan struct{})}
	go wk.read(fromChildR)
	go func() {
		_ = cmd.Wait()
		close(wk.exited)
	}()
	if err := wk.send(&frame{Kind: kindHello, CacheDir: p.cacheDir, blob: p.key}); err != nil {
		wk.kill()
		return nil, err
	}
	return wk, nil
}

// pipeSize is what growPipe asks for: Linux's default ceiling for an unprivileged process
// (/proc/sys/fs/pipe-max-size).
const pipeSize = 1 << 20

// growPipe enlarges f's pipe buffer, if the kernel allows; a pipe left at its default still works.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
}

// read routes the worker's frames: a load's answer to the load under way, a run's frames to that run.
// It reads until the pipe ends, after the process is gone, so a run that finished before a kill still
// gets its result; then it closes gone.
func (wk *worker) read(from *os.File) {
	defer close(wk.gone)
	defer from.Close()
	r := bufio.NewReaderSize(from, 64<<10)
	for {
		f, err := readFrame(r, false, nil)
		if err != nil {
			return
		}
		if f.Kind == kindLoaded {
			select {
			case wk.loadedCh <- f:
			case <-wk.stop:
			}
			continue
		}
		wk.mu.Lock()
		ch := wk.runs[f.ID]
		wk.mu.Unlock()
		if ch == nil {
			continue // a run that has given up (its worker is being killed), or a confused worker
		}
		// A run has at most a call and its end outstanding, and the channel room for both; a worker
		// sending more is confused, and the run it confuses fails on its deadline.
		select {
		case ch <- f:
		default:
		}
	}
}

// begin registers a run and returns its id and the channel its frames arrive on.
func (wk *worker) begin() (uint64, chan *frame) {
	ch := make(chan *frame, 2)
	wk.mu.Lock()
	defer wk.mu.Unlock()
	wk.lastID++
	wk.runs[wk.lastID] = ch
	return wk.lastID, ch
}

func (wk *worker) end(id uint64) {
	wk.mu.Lock()
	delete(wk.runs, id)
	wk.mu.Unlock()
}

// stopFor records why the host is about to kill the worker while it runs words; the first reason
// stands.
func (wk *worker) stopFor(why string) {
	wk.mu.Lock()
	if wk.stopped == "" {
		wk.stopped = why
	}
	wk.mu.Unlock()
}

func (wk *worker) stoppedFor() string {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	return wk.stopped
}

func (wk *worker) send(f *frame) error {
	wk.sendMu.Lock()
	defer wk.sendMu.Unlock()
	if err := writeFrame(wk.w, f); err != nil {
		return err
	}
	return wk.w.Flush()
}

// reapWait bounds how long a run waits for a killed worker to be gone; SIGKILL cannot be caught, so
// only a process stuck in the kernel takes longer.
const reapWait = 5 * time.Second

// kill stops the worker at once. Its pipes end, which ends its reader.
func (wk *worker) kill() {
	wk.once.Do(func() {
		close(wk.stop)
		_ = wk.cmd.Process.Kill()
		_ = wk.toW.Close()
	})
}

// signal wakes the acquires waiting for a run to end or a worker to go; p.mu is held.
func (p *workerPool) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// acquire takes a worker for a run of the word called word on the module key: an idle one with the
// module loaded, else one already running the word with room for one more run, else an idle one, else
// a new one while fewer than maxWorkers live, else it waits. A worker prestart is starting is waited for
// rather than a second one started. A worker holding the module on the interpreter is taken only for
// its word, and only when interpreted may run on it. Every acquire is paired with a release.
func (p *workerPool) acquire(ctx context.Context, key, word string, interpreted bool) (*worker, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errcode.New(errcode.WordHostFailed, "the host is closed")
		}
		if wk := p.pick(key, word, interpreted); wk != nil {
			p.mu.Unlock()
			return wk, nil
		}
		wait := p.starting
		if wait == nil && len(p.live)+p.spawning < p.maxWorkers {
			p.spawning++
			p.mu.Unlock()
			wk, err := p.spawn()
			p.mu.Lock()
			p.spawning--
			if err == nil && p.closed {
				wk.kill()
				err = errcode.New(errcode.WordHostFailed, "the host is closed")
			}
			if err != nil {
				p.signal()
				p.mu.Unlock()
				return nil, errcode.Wrap(err, errcode.WordHostFailed, "cannot start a wasm worker")
			}
			p.live[wk] = true
			wk.key, wk.word, wk.active = key, word, 1
			p.mu.Unlock()
			return wk, nil
		}
		if wait == nil {
			wait = p.changed
		}
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// pick takes a run's place in a worker that has one for word on the module key, or returns nil; p.mu is
// held.
func (p *workerPool) pick(key, word string, interpreted bool) *worker {
	take := func(i int) *worker {
		wk := p.idle[i]
		p.idle = slices.Delete(p.idle, i, i+1)
		wk.idle.Stop() // under p.mu: a reap that already fired finds it gone from p.idle and leaves it
		wk.key, wk.word, wk.active = key, word, 1
		return wk
	}
	// An idle worker with the module loaded costs nothing more and shares with no one.
	for i := len(p.idle) - 1; i >= 0; i-- {
		if wk := p.idle[i]; wk.loaded[key] && (wk.interpreted == "" || interpreted && wk.interpreted == word) {
			return take(i)
		}
	}
	// Then a worker running the word: one more instance, not one more process. Not one running its twin
	// (another word on the module): a kill at one word's deadline ends only that word's runs.
	for wk := range p.live {
		if !wk.dead && wk.active > 0 && wk.active < runsPerWorker && wk.key == key && wk.word == word && (interpreted || wk.interpreted == "") {
			wk.active++
			return wk
		}
	}
	for i := len(p.idle) - 1; i >= 0; i-- {
		if p.idle[i].interpreted == "" {
			return take(i)
		}
	}
	return nil
}

// prestart starts a worker in the background when none is idle and one more may run, so that its
// start overlaps what the caller does before it needs one (hashing and checking a module in Load).
func (p *workerPool) prestart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.starting != nil || len(p.idle) > 0 || len(p.live)+p.spawning >= p.maxWorkers {
		return
	}
	done := make(chan struct{})
	p.starting = done
	go func() {
		wk, err := p.spawn()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.starting = nil
		close(done)
		switch {
		case err != nil:
			p.log.Warn("cannot start a wasm worker", "err", err)
		case p.closed:
			wk.kill()
		default:
			p.live[wk] = true
			p.idle = append(p.idle, wk)
			wk.idle = time.AfterFunc(p.idleFor, func() { p.reap(wk) })
		}
	}()
}

// release ends a run's place in the worker. A worker that runs nothing more goes idle, or is
// forgotten if it died.
func (p *workerPool) release(wk *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	wk.active--
	if (p.closed || wk.retire && wk.active == 0) && !wk.dead {
		p.forget(wk)
	}
	if wk.active == 0 && !wk.dead {
		p.idle = append(p.idle, wk)
		wk.idle = time.AfterFunc(p.idleFor, func() { p.reap(wk) })
	}
	p.signal()
}

// forget kills the worker and stops counting it, so that another may start in its place; p.mu is
// held. Runs still in it end when its pipe does, and release their places then.
func (p *workerPool) forget(wk *worker) {
	wk.dead = true
	delete(p.live, wk)
	if i := slices.Index(p.idle, wk); i >= 0 {
		p.idle = slices.Delete(p.idle, i, i+1)
	}
	wk.kill()
	p.signal()
}

// reap ends a worker that stayed idle for idleFor, unless it was taken in the meantime.
func (p *workerPool) reap(wk *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Index(p.idle, wk) < 0 {
		return
	}
	p.forget(wk)
}

// drop kills a worker in a state the host cannot trust and forgets it. The caller still releases its
// place.
func (p *workerPool) drop(wk *worker, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if wk.dead {
		return
	}
	p.log.Info("wasm worker stopped", "pid", wk.cmd.Process.Pid, "reason", why)
	p.forget(wk)
}

func (p *workerPool) close() {
	p.mu.Lock()
	p.closed = true
	ws := make([]*worker, 0, len(p.live))
	for w := range p.live {
		ws = append(ws, w)
	}
	p.idle = nil
	if p.warming != nil {
		ws = append(ws, p.warming)
	}
	for _, w := range ws {
		w.dead = true
		delete(p.live, w)
	}
	p.signal()
	p.mu.Unlock()
	for _, w := range ws {
		w.kill()
		<-w.exited
	}
}

// register records how to get a module's bytes for the workers and compiles it in one, so that a
// module that cannot load fails here rather than at its first run. module is the bytes the caller has
// already hashed; source gives them again whenever another worker needs them.
func (p *workerPool) register(ctx context.Context, name, digest string, module []byte, source func() ([]byte, error), memory uint64, interpret bool) error {
	key := loadKey(digest, memory)
	p.mu.Lock()
	_, twin := p.modules[key] // another word on this module, loaded already: its registration stays
	if !twin {
		p.modules[key] = registered{digest: digest, memory: memory, source: source}
	}
	p.mu.Unlock()
	wk, err := p.acquire(ctx, key, name, interpret)
	if err != nil {
		return err
	}
	err = p.ensureLoaded(ctx, wk, key, name, module, interpret)
	if err != nil && !errcode.Has(err, errcode.WordModuleInvalid) && !errcode.Has(err, errcode.ModuleDigestMismatch) {
		p.drop(wk, err.Error())
	}
	p.release(wk)
	if err != nil && !twin {
		p.mu.Lock()
		delete(p.modules, key)
		p.mu.Unlock()
	}
	return err
}

// ensureLoaded has the worker compile the module if it has not, from module or else from the module's
// source, for the word called name. Concurrent runs of a word that a new worker hosts wait for the one
// load. When interpret allows it and the compile cache holds no entry for the module yet, the worker
// readies it for the interpreter instead, and a background worker compiles it into the cache for the
// runs after this one (Config.InterpretUncached).
func (p *workerPool) ensureLoaded(ctx context.Context, wk *worker, key, name string, module []byte, interpret bool) error {
	wk.loadMu.Lock()
	defer wk.loadMu.Unlock()
	p.mu.Lock()
	loaded, dead := wk.loaded[key], wk.dead
	reg, ok := p.modules[key]
	p.mu.Unlock()
	switch {
	case loaded:
		return nil
	case dead: // the load this run waited for failed, and its worker with it
		return errcode.New(errcode.WordHostFailed, "the wasm worker loading %s was stopped", name)
	case !ok:
		return errcode.New(errcode.WordHostFailed, "module %s of %s is not registered", key, name)
	}
	if module == nil {
		b, err := reg.source()
		if err != nil {
			return errcode.Wrap(err, errcode.WordHostFailed, "cannot read module %s again", name)
		}
		module = b
	}
	interpret = interpret && p.cacheDir != "" && !cachedEntryExists(p.cacheDir, reg.digest, (&engine{}).variant())
	if err := p.load(ctx, wk, &frame{Kind: kindLoad, Name: name, Digest: reg.digest, Memory: reg.memory, Interpret: interpret, blob: module}); err != nil {
		return err
	}
	p.mu.Lock()
	wk.loaded[key] = true
	if interpret {
		wk.interpreted = name
	}
	p.mu.Unlock()
	if interpret {
		go func() {
			if err := p.warm(context.Background(), name, reg.digest, reg.memory, reg.source); err != nil {
				p.log.Warn("cannot put a module in the compile cache", "module", name, "sha256", reg.digest, "err", err)
			}
		}()
	}
	return nil
}

// load sends the worker a load frame and waits for its answer.
func (p *workerPool) load(ctx context.Context, wk *worker, f *frame) error {
	if err := wk.send(f); err != nil {
		return errcode.Wrap(err, errcode.WordHostFailed, "wasm worker is gone")
	}
	name, digest := f.Name, f.Digest
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	var got *frame
	select {
	case got = <-wk.loadedCh:
	case <-wk.gone:
		select {
		case got = <-wk.loadedCh: // its answer came before its end
		default:
			return errcode.New(errcode.WordHostFailed, "wasm worker exited while loading %s (does the binary call wasm.ServeWorkerIfChild?)", name)
		}
	case <-ctx.Done():
		return errcode.Wrap(ctx.Err(), errcode.WordHostFailed, "loading %s in a worker took too long", name)
	}
	if got.Error != nil {
		e := errcode.New(got.Error.Code, "%s", got.Error.Message)
		e.Details = got.Error.Details
		return e
	}
	if got.Stats != nil {
		p.stats.add(*got.Stats)
		if got.Stats.Rejected > 0 {
			p.log.Warn("compile-cache entry failed verification; recompiled from verified bytes", "module", name, "sha256", digest)
		}
	}
	return nil
}

// warm has a background worker put the module in the compile cache, if it is not there, and keep
// nothing. It takes no slot: a word to run now never waits for a compile ahead of time, and the
// background worker yields the CPU to it. One module is warmed at a time.
func (p *workerPool) warm(ctx context.Context, name, digest string, memory uint64, source func() ([]byte, error)) error {
	cached := func() bool { return p.cacheDir == "" || cachedEntryExists(p.cacheDir, digest, (&engine{}).variant()) }
	if cached() {
		return nil
	}
	p.warmMu.Lock()
	defer p.warmMu.Unlock()
	if cached() { // warmed while this one waited its turn (a run's warm and the vocabulary's)
		return nil
	}
	module, err := source()
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errcode.New(errcode.WordHostFailed, "the host is closed")
	}
	p.mu.Unlock()
	wk, err := p.spawnWorker(true)
	if err != nil {
		return errcode.Wrap(err, errcode.WordHostFailed, "cannot start a wasm worker")
	}
	p.mu.Lock()
	p.warming = wk
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.warming = nil
		p.mu.Unlock()
		wk.kill()
		<-wk.exited
	}()
	return p.load(ctx, wk, &frame{Kind: kindLoad, Warm: true, Name: name, Digest: digest, Memory: memory, blob: module})
}

// run runs one invocation in a worker, answering its capability calls, and kills the worker when ctx
// ends first. The other runs the worker hosts (of the same word) end with it: word.sibling_stopped.
// A look word that ran on the interpreter and was stopped at its deadline runs once more, compiled: a
// look changes nothing, and its first run must not fail where compiled code would have finished.
func (p *workerPool) run(ctx context.Context, mod *Module, input []byte, d *caps.Dispatcher) rawRun {
	raw, interpreted := p.runOn(ctx, mod, input, d, mod.interpret)
	if interpreted && raw.killed && errors.Is(raw.ctxErr, context.DeadlineExceeded) && ctx.Err() == nil {
		p.log.Info("word stopped at its deadline on the interpreter; running it again compiled", "word", mod.m.Name)
		d.RunAgain()
		raw, _ = p.runOn(ctx, mod, input, d, false)
	}
	return raw
}

// runOn is run on one worker: one that holds the module on the interpreter only when interpret
// allows it, as the second result says it did.
func (p *workerPool) runOn(ctx context.Context, mod *Module, input []byte, d *caps.Dispatcher, interpret bool) (rawRun, bool) {
	key := loadKey(mod.digest, mod.lim.memory)
	wk, err := p.acquire(ctx, key, mod.m.Name, interpret)
	if err != nil {
		if ctx.Err() != nil {
			return rawRun{killed: true, ctxErr: ctx.Err()}, false
		}
		return rawRun{hostErr: err}, false
	}
	defer p.release(wk)
	if err := p.ensureLoaded(ctx, wk, key, mod.m.Name, nil, interpret); err != nil {
		p.drop(wk, err.Error())
		if ctx.Err() != nil {
			return rawRun{killed: true, ctxErr: ctx.Err()}, false
		}
		return rawRun{hostErr: err}, false
	}
	p.mu.Lock()
	interpreted := wk.interpreted != ""
	wk.retire = wk.retire || interpreted // the next runs find the compiled code, or ready the module anew
	p.mu.Unlock()
	return p.runIn(ctx, wk, mod, input, d), interpreted
}

// runIn runs one invocation in wk, which holds the module.
func (p *workerPool) runIn(ctx context.Context, wk *worker, mod *Module, input []byte, d *caps.Dispatcher) rawRun {
	id, frames := wk.begin()
	defer wk.end(id)
	start := time.Now() // before the deadline is set, so a word stopped at it is seen to run it all
	ctx, cancel := mod.wordContext(ctx)
	defer cancel()
	err := wk.send(&frame{Kind: kindRun, ID: id, Name: mod.m.Name, Digest: mod.digest, Memory: mod.lim.memory,
		Output: mod.lim.output, Transcript: mod.lim.transcript, blob: input})
	if err != nil {
		return p.lost(ctx, wk, mod, start, "cannot send run")
	}
	answers := make(chan []byte, 1)
	// handle takes a frame of this run; it returns the run's end, or nil while it goes on.
	handle := func(f *frame) *rawRun {
		switch f.Kind {
		case kindCall:
			req := f.blob
			go func() { answers <- d.Call(ctx, req) }()
			return nil
		case kindDone:
			n := max(0, min(f.StdoutLen, len(f.blob)))
			raw := rawRun{
				runOutcome: runOutcome{exited: f.Exited, exitCode: f.ExitCode},
				stdout:     f.blob[:n], stderr: f.blob[n:],
				stdoutOver: f.StdoutOver, stdOverE: f.StderrOver, memExceeded: f.MemExceeded,
			}
			if f.Trap != "" {
				raw.trap = fmt.Errorf("%s", f.Trap)
			}
			raw.took = time.Since(start)
			return &raw
		}
		p.drop(wk, "unexpected frame "+f.Kind)
		return &rawRun{hostErr: errcode.New(errcode.WordHostFailed, "the wasm worker sent %q during a run", f.Kind)}
	}
	for {
		select {
		case f := <-frames:
			if raw := handle(f); raw != nil {
				return *raw
			}
		case resp := <-answers:
			if err := wk.send(&frame{Kind: kindAnswer, ID: id, blob: resp}); err != nil {
				return p.lost(ctx, wk, mod, start, "cannot answer")
			}
		case <-wk.gone:
			// Every frame the worker sent is delivered before gone closes: a run that ended just before
			// its worker did keeps its result.
			for len(frames) > 0 {
				if f := <-frames; f.Kind == kindDone {
					return *handle(f)
				}
			}
			return p.lost(ctx, wk, mod, start, "exited during a run")
		case <-ctx.Done():
			if len(frames) > 0 {
				// A frame that came with the deadline: a run that ended in time keeps its result and
				// costs its worker's other runs nothing.
				if f := <-frames; f.Kind == kindDone {
					return *handle(f)
				}
			}
			why := "deadline"
			if ctx.Err() == context.Canceled {
				why = "cancel"
			}
			wk.stopFor(why) // before the kill, so the worker's other runs learn why they end
			p.drop(wk, "stopped at the "+why)
			// The word has stopped when its process is gone, not when the kill is sent: that is the
			// time the result reports.
			select {
			case <-wk.exited:
			case <-time.After(reapWait):
				p.log.Warn("wasm worker killed at the deadline has not exited", "pid", wk.cmd.Process.Pid, "after", reapWait)
			}
			return rawRun{killed: true, ctxErr: ctx.Err(), took: time.Since(start)}
		}
	}
}

// lost reports a run whose worker ended under it: stopped by its own deadline or cancel, by another
// run's (word.sibling_stopped), or gone for a reason of its own (a crash: word.host_failed). None of
// them completed, and none is retried: it may have made changes.
func (p *workerPool) lost(ctx context.Context, wk *worker, mod *Module, start time.Time, why string) rawRun {
	p.drop(wk, why)
	if ctx.Err() != nil {
		return rawRun{killed: true, ctxErr: ctx.Err(), took: time.Since(start)}
	}
	took := time.Since(start)
	if by := wk.stoppedFor(); by != "" {
		return rawRun{took: took, hostErr: errcode.New(errcode.WordSiblingStopped,
			"%s was stopped because another run of it in the same worker process was stopped (its %s)", mod.m.Name, by)}
	}
	return rawRun{took: took, hostErr: errcode.New(errcode.WordHostFailed, "the wasm worker running %s died", mod.m.Name)}
}
