package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// engine compiles verified modules and runs fresh instances of them. The same engine runs words in
// this process and inside a worker process; only stopInCode differs.
type engine struct {
	cache *compileCache // nil: compile every time
	// staged is a cache session begun ahead of its compile (stage); a worker's loop is its only user.
	staged *stagedSession
	// stopInCode makes compiled code check for a closed module at every loop header, so a deadline can
	// stop a runaway inside this process. It costs most of a call's time; a worker process, which is
	// killed instead, runs without it.
	stopInCode bool
}

// maxMemoryPages is the runtime's own ceiling, the manifest's maximum. The word's real limit is enforced
// by its memoryPool, which also tells a refused grow apart from a crash.
const maxMemoryPages = manifest.MaxMemoryMiB << 20 >> 16

// compiled is one module ready to instantiate. It is the module's, not a word's: words sharing a module
// (telling themselves apart by their name at start) share it, so it holds nothing of any one of them,
// and each instance is made under the name of the word it is for.
type compiled struct {
	rt    wazero.Runtime
	cm    wazero.CompiledModule
	wz    wazero.CompilationCache
	mem   *memoryPool
	stats CacheStats

	nextMu sync.Mutex
	next   chan *instance // the instance prepared for the next run (prepareNext), if any; under nextMu
}

// stagedSession is a compile-cache session being begun in the background: its entry read, verified
// and staged for wazero.
type stagedSession struct {
	digest string
	done   chan struct{}
	s      *cacheSession
	err    error
}

// stage begins the cache session for the module with digest in the background, so that verifying and
// staging its entry overlaps receiving and hashing the module. The next compile of digest takes it;
// anything else drops it.
func (e *engine) stage(digest string) {
	if e.cache == nil {
		return
	}
	e.unstage()
	st := &stagedSession{digest: digest, done: make(chan struct{})}
	e.staged = st
	go func() {
		defer close(st.done)
		st.s, st.err = e.cache.begin(digest, e.variant())
	}()
}

// unstage drops a staged session nobody will use.
func (e *engine) unstage() {
	st := e.staged
	if st == nil {
		return
	}
	e.staged = nil
	<-st.done
	if st.s != nil {
		st.s.close()
		_ = st.s.wz.Close(context.Background())
	}
}

// begin returns the cache session for digest: the staged one, or one begun now.
func (e *engine) begin(digest string) (*cacheSession, error) {
	if st := e.staged; st != nil && st.digest == digest {
		e.staged = nil
		<-st.done
		return st.s, st.err
	}
	e.unstage()
	return e.cache.begin(digest, e.variant())
}

func (e *engine) variant() string {
	if e.stopInCode {
		return "stop"
	}
	return "plain"
}

// checkDigest is the one check that module is the pinned bytes. It runs once in the process that
// compiles them: in Load in process, and in a worker on the bytes its host sent.
func checkDigest(name string, module []byte, pinned string) error {
	if got := cas.Sum(module); got != pinned {
		return errcode.New(errcode.ModuleDigestMismatch, "%s: module bytes hash to %s, not the pinned %s", name, got, pinned).
			With(errcode.DetailSHA256, pinned)
	}
	return nil
}

// foreground marks a compile someone waits for (a load, not a warm): wazero then compiles the
// module's functions on procs goroutines, which roughly halves a Go word's compile on two cores. A
// warm compiles on one, leaving the node's other cores to its work.
func foreground(ctx context.Context, procs int) context.Context {
	return experimental.WithCompilationWorkers(ctx, procs)
}

// compile compiles module, which checkDigest has found to be digest's bytes, for words that may use
// memLimit bytes.
func (e *engine) compile(ctx context.Context, digest string, module []byte, memLimit uint64) (*compiled, error) {
	c, err := e.compileOnce(ctx, digest, module, memLimit, true)
	if err != nil && errcode.Code(err) == errcode.IOFailed {
		c, err = e.compileOnce(ctx, digest, module, memLimit, false)
	}
	return c, err
}

// validatedModuleKey is the patched wazero's experimental.ValidatedModuleKey (third_party/wazero),
// named by its value: a module that imports Lexicon gets the wazero release, since go.mod replacements
// reach only the main module, and the release has no such name. It ignores the key, and loads an entry
// checking it in full.
const validatedModuleKey = "github.com/tetratelabs/wazero/experimental.ValidatedModule"

func (e *engine) compileOnce(ctx context.Context, digest string, module []byte, memLimit uint64, useCache bool) (*compiled, error) {
	cfg := wazero.NewRuntimeConfigCompiler()
	var sess *cacheSession
	var wz wazero.CompilationCache
	if e.cache != nil && useCache {
		s, err := e.begin(digest)
		if err != nil {
			return nil, err
		}
		sess, wz = s, s.wz
		defer sess.close()
		cfg = cfg.WithCompilationCache(wz)
	}
	c, err := e.newRuntime(ctx, cfg, memLimit, wz)
	if err != nil {
		return nil, err
	}
	if sess != nil && sess.hadCopy != "" {
		// The staged entry's MAC, under this node's key, says this wazero validated and compiled these
		// very bytes (checkDigest has matched them to the pin) and that the entry is the one it wrote
		// then: wazero need not validate the function bodies again nor checksum the entry. Should
		// wazero not use the entry after all, it validates in full before it compiles.
		ctx = context.WithValue(ctx, validatedModuleKey, true)
	}
	cm, err := c.rt.CompileModule(ctx, module)
	if err != nil {
		c.close()
		if sess != nil && sess.hadCopy != "" {
			// A verified entry wazero could not use (another CPU, a wazero bug): drop it and compile.
			sess.forget()
			return nil, errcode.Wrap(err, errcode.IOFailed, "compile-cache entry unusable")
		}
		return nil, errcode.Wrap(err, errcode.WordModuleInvalid, "module does not compile")
	}
	c.cm = cm
	if sess != nil {
		sess.finish()
		c.stats = sess.stats
	}
	return c.shaped(memLimit)
}

// interpret readies module, which checkDigest has found to be the pinned bytes, for wazero's
// interpreter: it decodes and validates the module and compiles nothing (the patched interpreter
// lowers each function when a call first enters it), so it is ready in a small part of a compile's
// time, and runs many times slower. Nothing goes to the compile cache. The pool uses it
// for a look word whose compiled code is not cached yet (Config.InterpretUncached).
func (e *engine) interpret(ctx context.Context, module []byte, memLimit uint64) (*compiled, error) {
	c, err := e.newRuntime(ctx, wazero.NewRuntimeConfigInterpreter(), memLimit, nil)
	if err != nil {
		return nil, err
	}
	cm, err := c.rt.CompileModule(ctx, module)
	if err != nil {
		c.close()
		return nil, errcode.Wrap(err, errcode.WordModuleInvalid, "module does not compile")
	}
	c.cm, c.stats.Interpreted = cm, 1
	return c.shaped(memLimit)
}

// newRuntime builds a runtime from cfg, either engine, with the engine's stop mode, the manifest's
// memory ceiling and the modules the host provides. wz, the compile-cache session cfg uses if any, is
// closed with it.
func (e *engine) newRuntime(ctx context.Context, cfg wazero.RuntimeConfig, memLimit uint64, wz wazero.CompilationCache) (*compiled, error) {
	cfg = cfg.WithCloseOnContextDone(e.stopInCode).WithMemoryLimitPages(maxMemoryPages)
	c := &compiled{mem: newMemoryPool(memLimit), wz: wz, rt: wazero.NewRuntimeWithConfig(ctx, cfg)}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, c.rt); err != nil {
		c.close()
		return nil, errcode.Wrap(err, errcode.WordHostFailed, "cannot build wasi_snapshot_preview1")
	}
	if err := instantiateLexiconV1(ctx, c.rt); err != nil {
		c.close()
		return nil, errcode.Wrap(err, errcode.WordHostFailed, "cannot build %s", ModuleName)
	}
	return c, nil
}

// shaped returns c if its module has a word's shape (checkShape), and closes it otherwise.
func (c *compiled) shaped(memLimit uint64) (*compiled, error) {
	if err := checkShape(c.cm, memLimit); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// checkShape refuses a module that is not a WASI command importing only what the host provides, or
// whose initial memory is already over its limit.
func checkShape(cm wazero.CompiledModule, memLimit uint64) error {
	for _, f := range cm.ImportedFunctions() {
		mod, fn, _ := f.Import()
		if mod != wasi_snapshot_preview1.ModuleName && mod != ModuleName {
			return errcode.New(errcode.WordModuleInvalid, "module imports %s.%s; words import only %s and %s",
				mod, fn, wasi_snapshot_preview1.ModuleName, ModuleName).With(errcode.DetailImport, mod+"."+fn)
		}
	}
	if len(cm.ImportedMemories()) > 0 {
		return errcode.New(errcode.WordModuleInvalid, "module imports a memory; a word owns its own")
	}
	start, ok := cm.ExportedFunctions()["_start"]
	if !ok || len(start.ParamTypes()) != 0 || len(start.ResultTypes()) != 0 {
		return errcode.New(errcode.WordModuleInvalid, "module exports no _start(); a word is a WASI command")
	}
	for _, m := range cm.ExportedMemories() {
		if uint64(m.Min())<<16 > memLimit {
			return errcode.New(errcode.WordModuleInvalid, "module starts with %d MiB of memory, over its %d MiB limit",
				uint64(m.Min())>>4, memLimit>>20).With(errcode.DetailLimitMiB, memLimit>>20)
		}
	}
	return nil
}

func (c *compiled) close() {
	ctx := context.Background()
	if c.rt != nil {
		_ = c.rt.Close(ctx)
	}
	if c.wz != nil {
		_ = c.wz.Close(ctx)
	}
	if c.mem != nil {
		c.mem.close()
	}
}

// invocation is one run of a word: its name, input, capped streams and what the host learned.
type invocation struct {
	name           string // the word's: what its instance is started as (argv[0])
	stdin          []byte
	stdout, stderr *cappedBuffer
	mem            *memoryTrack // the memory of the instance it ran in; set by run
	caller         hostCaller
	pending        []byte // a response too large for the guest's buffer, until take
}

// memExceeded reports whether the word asked for more memory than its limit.
func (inv *invocation) memExceeded() bool { return inv.mem != nil && inv.mem.exceeded.Load() }

// runOutcome is how a run ended, before it is judged.
type runOutcome struct {
	exited   bool
	exitCode uint32
	trap     error // set when the run ended neither by exit nor cleanly
}

// instance is a fresh instance, instantiated (memory mapped, data applied, tables built) and never run.
// Its streams and its clock's sleep reach whichever invocation it is given to, so it can be made before
// that invocation exists: a worker makes the next one while it waits for work.
type instance struct {
	name  string // the word it was made for: its argv[0], fixed at instantiation
	mod   api.Module
	err   error
	track *memoryTrack
	io    *instanceIO
}

// instanceIO is an instance's stdin, stdout, stderr and sleep, bound to its invocation when it runs.
type instanceIO struct {
	inv   *invocation
	stdin bytes.Reader
	ctx   context.Context
}

func (s *instanceIO) Read(p []byte) (int, error) { return s.stdin.Read(p) }

type instanceStdout struct{ s *instanceIO }

func (w instanceStdout) Write(p []byte) (int, error) { return w.s.inv.stdout.Write(p) }

type instanceStderr struct{ s *instanceIO }

func (w instanceStderr) Write(p []byte) (int, error) { return w.s.inv.stderr.Write(p) }

// instantiate makes a fresh instance of the module for the word called name.
func (c *compiled) instantiate(ctx context.Context, name string) (in *instance) {
	in = &instance{name: name, track: &memoryTrack{}, io: &instanceIO{ctx: context.Background()}}
	defer func() {
		if r := recover(); r != nil { // a wazero panic costs this instance, never the host
			in.err = fmt.Errorf("host panic: %v", r)
		}
	}()
	ctx = experimental.WithMemoryAllocator(ctx, c.mem.allocator(in.track))
	sio := in.io
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs(name).
		WithStdin(sio).
		WithStdout(instanceStdout{sio}).
		WithStderr(instanceStderr{sio}).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(func(ns int64) { sleepCtx(sio.ctx, ns) }).
		WithRandSource(rand.Reader).
		WithStartFunctions()
	in.mod, in.err = c.rt.InstantiateModule(ctx, c.cm, cfg)
	return in
}

// prepareNext starts making the instance the next run will take, off that run's path, for the word
// called name: the one that ran last is the likeliest next. Only workers use it; their concurrent runs
// each take the prepared instance or make their own (take).
func (c *compiled) prepareNext(name string) {
	c.nextMu.Lock()
	defer c.nextMu.Unlock()
	if c.next != nil {
		return
	}
	ch := make(chan *instance, 1)
	c.next = ch
	go func() { ch <- c.instantiate(context.Background(), name) }()
}

// take returns a fresh instance for the word called name: the one prepared, if it was prepared for
// that word, or one made now. An instance prepared for a twin (another word on the same module) is
// closed unused: its argv[0] is the twin's, and a word that learns what it is from its name would run
// as the twin. The prepared one goes to exactly one caller: whoever takes its channel out of c.next,
// under nextMu; a run concurrent with it finds c.next empty and makes its own.
func (c *compiled) take(ctx context.Context, name string) *instance {
	c.nextMu.Lock()
	ch := c.next
	c.next = nil
	c.nextMu.Unlock()
	if ch != nil {
		in := <-ch
		if in.err == nil && in.name == name {
			return in
		}
		if in.mod != nil {
			_ = in.mod.Close(context.Background())
		}
	}
	return c.instantiate(ctx, name)
}

// run runs _start in a fresh instance. ctx's deadline stops it only with stopInCode.
func (c *compiled) run(ctx context.Context, inv *invocation) (out runOutcome) {
	// A wazero panic must cost this call, never the host.
	defer func() {
		if r := recover(); r != nil {
			out = runOutcome{trap: fmt.Errorf("host panic: %v", r)}
		}
	}()
	in := c.take(ctx, inv.name)
	inv.mem = in.track
	if in.err != nil {
		return classifyExit(in.err)
	}
	defer in.mod.Close(context.Background())
	in.io.inv, in.io.ctx = inv, ctx
	in.io.stdin.Reset(inv.stdin)
	ctx = context.WithValue(ctx, invocationKey{}, inv)
	_, err := in.mod.ExportedFunction("_start").Call(ctx)
	return classifyExit(err)
}

func classifyExit(err error) runOutcome {
	if err == nil {
		return runOutcome{exited: true}
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled:
			return runOutcome{trap: err}
		}
		return runOutcome{exited: true, exitCode: exit.ExitCode()}
	}
	return runOutcome{trap: err}
}

// sleepCtx is the word's clock sleep: it ends early when the invocation does, so a sleeping word cannot
// hold a deadline open.
func sleepCtx(ctx context.Context, ns int64) {
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// cappedBuffer keeps at most limit bytes. A write past the cap stops the word at once: the host function
// writing for it panics with a sys.ExitError, the way proc_exit ends a module, so a flood costs
// nothing more than its cap.
type cappedBuffer struct {
	buf      bytes.Buffer
	limit    int
	overflow bool
}

// exitOverflow is the exit code a cap overflow stops the word with; overflow, not the code, is what the
// host reads.
const exitOverflow = 0x0f10

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		b.overflow = true
		panic(sys.NewExitError(exitOverflow))
	}
	return b.buf.Write(p)
}

var (
	_ io.Writer  = (*cappedBuffer)(nil)
	_ hostCaller = dispatchCaller{}
	_ hostCaller = relay{}
)
