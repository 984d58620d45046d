package wasm

import (
	"bufio"
	"context"
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

// workerPool is the host's side: it starts, hands out and kills workers.
type workerPool struct {
	key      []byte
	cacheDir string
	idleFor  time.Duration
	stats    *cacheCounters
	log      *slog.Logger
	slots    chan struct{}

	mu       sync.Mutex
	idle     []*worker
	live     map[*worker]bool
	modules  map[string]registered
	closed   bool
	starting chan struct{} // closed when the worker prestart is starting is ready; nil if none is
	warming  *worker       // the background worker warm is using, if any
	warmMu   sync.Mutex    // one warm at a time
}

// registered is a loaded module as the pool knows it. The pool keeps no bytes: a worker that needs the
// module gets them from source, and hashes them against digest before it compiles them.
type registered struct {
	name, digest string
	memory       uint64
	source       func() ([]byte, error)
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
	return &workerPool{key: key, cacheDir: cfg.CacheDir, idleFor: idle, stats: stats, log: log,
		slots: make(chan struct{}, n), live: map[*worker]bool{}, modules: map[string]registered{}}, nil
}

// worker is one worker process.
type worker struct {
	cmd    *exec.Cmd
	w      *bufio.Writer
	toW    io.Closer
	frames chan *frame // closed when the worker's pipe ends
	loaded map[string]bool
	dead   bool
	exited chan struct{}
	stop   chan struct{} // closed by kill, so the reader never blocks on a run nobody waits for
	once   sync.Once
	idle   *time.Timer // while idle: ends the worker when it has been idle too long
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
		frames: make(chan *frame, 1), loaded: map[string]bool{}, exited: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		r := bufio.NewReaderSize(fromChildR, 64<<10)
		for {
			f, err := readFrame(r, false, nil)
			if err != nil {
				close(wk.frames)
				fromChildR.Close()
				return
			}
			select {
			case wk.frames <- f:
			case <-wk.stop:
				close(wk.frames)
				fromChildR.Close()
				return
			}
		}
	}()
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

func (wk *worker) send(f *frame) error {
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
	wk.dead = true
	wk.once.Do(func() {
		close(wk.stop)
		_ = wk.cmd.Process.Kill()
		_ = wk.toW.Close()
	})
}

// acquire takes a slot and a worker, preferring one that has the module loaded. A worker prestart is
// starting is waited for rather than a second one started.
func (p *workerPool) acquire(ctx context.Context, key string) (*worker, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			<-p.slots
			return nil, errcode.New(errcode.WordHostFailed, "the host is closed")
		}
		if wk := p.takeIdle(key); wk != nil {
			p.mu.Unlock()
			return wk, nil
		}
		starting := p.starting
		p.mu.Unlock()
		if starting == nil {
			break
		}
		select {
		case <-starting:
		case <-ctx.Done():
			<-p.slots
			return nil, ctx.Err()
		}
	}
	wk, err := p.spawn()
	if err != nil {
		<-p.slots
		return nil, errcode.Wrap(err, errcode.WordHostFailed, "cannot start a wasm worker")
	}
	p.mu.Lock()
	p.live[wk] = true
	p.mu.Unlock()
	return wk, nil
}

// takeIdle takes an idle worker, one with the module loaded if there is one; p.mu is held.
func (p *workerPool) takeIdle(key string) *worker {
	pick := -1
	for i, w := range p.idle {
		if w.loaded[key] {
			pick = i
		}
	}
	if pick < 0 && len(p.idle) > 0 {
		pick = len(p.idle) - 1
	}
	if pick < 0 {
		return nil
	}
	wk := p.idle[pick]
	p.idle = append(p.idle[:pick], p.idle[pick+1:]...)
	wk.idle.Stop() // under p.mu: a reap that already fired finds it gone from p.idle and leaves it
	return wk
}

// prestart starts a worker in the background when none is idle and one more may run, so that its
// start overlaps what the caller does before it needs one (hashing and checking a module in Load).
func (p *workerPool) prestart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.starting != nil || len(p.idle) > 0 || len(p.live) >= cap(p.slots) {
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

// release gives the worker back, or forgets it if it died.
func (p *workerPool) release(wk *worker) {
	p.mu.Lock()
	if wk.dead || p.closed {
		delete(p.live, wk)
		if !wk.dead {
			wk.kill()
		}
	} else {
		p.idle = append(p.idle, wk)
		wk.idle = time.AfterFunc(p.idleFor, func() { p.reap(wk) })
	}
	p.mu.Unlock()
	<-p.slots
}

// reap ends a worker that stayed idle for idleFor, unless it was taken in the meantime.
func (p *workerPool) reap(wk *worker) {
	p.mu.Lock()
	i := slices.Index(p.idle, wk)
	if i < 0 {
		p.mu.Unlock()
		return
	}
	p.idle = slices.Delete(p.idle, i, i+1)
	delete(p.live, wk)
	p.mu.Unlock()
	wk.kill()
}

// drop kills a worker in a state the host cannot trust and forgets it.
func (p *workerPool) drop(wk *worker, why string) {
	p.log.Info("wasm worker stopped", "pid", wk.cmd.Process.Pid, "reason", why)
	wk.kill()
	p.release(wk)
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
	p.mu.Unlock()
	for _, w := range ws {
		w.kill()
		<-w.exited
	}
}

// register records how to get a module's bytes for the workers and compiles it in one, so that a
// module that cannot load fails here rather than at its first run. module is the bytes the caller has
// already hashed; source gives them again whenever another worker needs them.
func (p *workerPool) register(ctx context.Context, name, digest string, module []byte, source func() ([]byte, error), memory uint64) error {
	key := loadKey(digest, memory)
	p.mu.Lock()
	p.modules[key] = registered{name: name, digest: digest, memory: memory, source: source}
	p.mu.Unlock()
	wk, err := p.acquire(ctx, key)
	if err != nil {
		return err
	}
	err = p.ensureLoaded(ctx, wk, key, module)
	if err != nil && !errcode.Has(err, errcode.WordModuleInvalid) && !errcode.Has(err, errcode.ModuleDigestMismatch) {
		p.drop(wk, err.Error())
	} else {
		p.release(wk)
	}
	if err != nil {
		p.mu.Lock()
		delete(p.modules, key)
		p.mu.Unlock()
	}
	return err
}

// ensureLoaded has the worker compile the module if it has not, from module or else from the module's
// source.
func (p *workerPool) ensureLoaded(ctx context.Context, wk *worker, key string, module []byte) error {
	if wk.loaded[key] {
		return nil
	}
	p.mu.Lock()
	reg, ok := p.modules[key]
	p.mu.Unlock()
	if !ok {
		return errcode.New(errcode.WordHostFailed, "module %s is not registered", key)
	}
	if module == nil {
		b, err := reg.source()
		if err != nil {
			return errcode.Wrap(err, errcode.WordHostFailed, "cannot read module %s again", reg.name)
		}
		module = b
	}
	if err := p.load(ctx, wk, &frame{Kind: kindLoad, Name: reg.name, Digest: reg.digest, Memory: reg.memory, blob: module}); err != nil {
		return err
	}
	wk.loaded[key] = true
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
	select {
	case f, ok := <-wk.frames:
		if !ok {
			return errcode.New(errcode.WordHostFailed, "wasm worker exited while loading %s (does the binary call wasm.ServeWorkerIfChild?)", name)
		}
		if f.Kind != kindLoaded {
			return errcode.New(errcode.WordHostFailed, "wasm worker answered %q to a load", f.Kind)
		}
		if f.Error != nil {
			e := errcode.New(f.Error.Code, "%s", f.Error.Message)
			e.Details = f.Error.Details
			return e
		}
		if f.Stats != nil {
			p.stats.add(*f.Stats)
			if f.Stats.Rejected > 0 {
				p.log.Warn("compile-cache entry failed verification; recompiled from verified bytes", "module", name, "sha256", digest)
			}
		}
		return nil
	case <-ctx.Done():
		return errcode.Wrap(ctx.Err(), errcode.WordHostFailed, "loading %s in a worker took too long", name)
	}
}

// warm has a background worker put the module in the compile cache, if it is not there, and keep
// nothing. It takes no slot: a word to run now never waits for a compile ahead of time, and the
// background worker yields the CPU to it. One module is warmed at a time.
func (p *workerPool) warm(ctx context.Context, name, digest string, memory uint64, source func() ([]byte, error)) error {
	if p.cacheDir == "" || cachedEntryExists(p.cacheDir, digest, (&engine{}).variant()) {
		return nil
	}
	p.warmMu.Lock()
	defer p.warmMu.Unlock()
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
// ends first.
func (p *workerPool) run(ctx context.Context, mod *Module, input []byte, d *caps.Dispatcher) rawRun {
	key := loadKey(mod.digest, mod.lim.memory)
	wk, err := p.acquire(ctx, key)
	if err != nil {
		if ctx.Err() != nil {
			return rawRun{killed: true, ctxErr: ctx.Err()}
		}
		return rawRun{hostErr: err}
	}
	if err := p.ensureLoaded(ctx, wk, key, nil); err != nil {
		p.drop(wk, err.Error())
		if ctx.Err() != nil {
			return rawRun{killed: true, ctxErr: ctx.Err()}
		}
		return rawRun{hostErr: err}
	}
	start := time.Now() // before the deadline is set, so a word stopped at it is seen to run it all
	ctx, cancel := mod.wordContext(ctx)
	defer cancel()
	err = wk.send(&frame{Kind: kindRun, Digest: mod.digest, Memory: mod.lim.memory,
		Output: mod.lim.output, Transcript: mod.lim.transcript, blob: input})
	if err != nil {
		p.drop(wk, "cannot send run")
		return rawRun{hostErr: errcode.Wrap(err, errcode.WordHostFailed, "wasm worker is gone")}
	}
	answers := make(chan []byte, 1)
	for {
		select {
		case f, ok := <-wk.frames:
			if !ok {
				p.drop(wk, "exited during a run")
				return rawRun{hostErr: errcode.New(errcode.WordHostFailed, "the wasm worker running %s died", mod.m.Name)}
			}
			switch f.Kind {
			case kindCall:
				req := f.blob
				go func() { answers <- d.Call(ctx, req) }()
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
				p.release(wk)
				return raw
			default:
				p.drop(wk, "unexpected frame "+f.Kind)
				return rawRun{hostErr: errcode.New(errcode.WordHostFailed, "the wasm worker sent %q during a run", f.Kind)}
			}
		case resp := <-answers:
			if err := wk.send(&frame{Kind: kindAnswer, blob: resp}); err != nil {
				p.drop(wk, "cannot answer")
				return rawRun{hostErr: errcode.Wrap(err, errcode.WordHostFailed, "wasm worker is gone")}
			}
		case <-ctx.Done():
			p.drop(wk, "stopped at the deadline")
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
