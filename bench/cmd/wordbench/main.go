// Command wordbench measures the word host beside the Extism Go SDK holding the same word, in the same
// run, and prints the ratios (`make bench`). Absolute figures move with the machine and its load; the
// ratios measured side by side are the figures to compare.
//
//	wordbench -module build/wasm/testdata/ref.wasm [-runs 5] [-calls 400] [-first 15] [-rss 3]
//
// Figures: the fresh-state call (a new instance per call, p50 and CPU per call), the first call of a new
// process with a warm compile cache (exec to exit, wall and CPU), and the resident memory each
// concurrently running word costs. Every figure is a median over runs, with its range.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
)

// childEnv makes this binary one measured process: a first call or an RSS sample.
const childEnv = "LEXICON_WORDBENCH_CHILD"

var params = []byte(`{"name": "bench", "count": 1}`)

const refManifest = `{"schema": "lexicon/manifest/v1", "name": "ref", "kind": "word", "version": "1.0.0",
	"class": "look", "summary": "Reference word.", "params": {"type": "object", "additionalProperties": false,
	"properties": {"name": {"type": "string"}, "count": {"type": "integer"}, "hold_ms": {"type": "integer"}}},
	"output": {"type": "object"}, "module": {"file": "ref.wasm"}}`

func main() {
	wasm.ServeWorkerIfChild()
	if c := os.Getenv(childEnv); c != "" {
		os.Exit(child(c))
	}
	module := flag.String("module", "build/wasm/testdata/ref.wasm", "the reference word (make wasm)")
	runs := flag.Int("runs", 5, "runs of each figure")
	calls := flag.Int("calls", 400, "calls per fresh-state run")
	first := flag.Int("first", 15, "new processes per first-call figure")
	rss := flag.Int("rss", 3, "runs of the RSS figure")
	only := flag.String("only", "", "comma-separated figures to run (call,start,first,rss); empty runs all")
	empty := flag.String("empty", "", "the empty word built with sdk/word (default: empty.wasm beside -module)")
	bare := flag.String("bare", "", "the bare wasip1 command (default: bare.wasm beside -module)")
	flag.Parse()
	abs, err := filepath.Abs(*module)
	if err != nil {
		fail(err)
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		fail(fmt.Errorf("%v (run make wasm)", err))
	}
	want := func(f string) bool { return *only == "" || slices.Contains(strings.Split(*only, ","), f) }
	fmt.Printf("word host vs Extism Go SDK on %s (%d KiB), %d cores, load %s\n", filepath.Base(abs), len(b)>>10, numCPU(), loadavg())
	if want("call") {
		freshCalls(b, *runs, *calls)
	}
	if want("start") {
		starts(b, beside(abs, *empty, "empty.wasm"), beside(abs, *bare, "bare.wasm"), *runs, *calls)
	}
	if want("first") {
		firstCalls(abs, sha256Hex(b), *runs, *first, false)
		firstCalls(abs, sha256Hex(b), *runs, *first, true)
	}
	if want("rss") {
		rssPerWord(abs, sha256Hex(b), *rss)
	}
}

// beside is path, or name in module's folder when path is empty.
func beside(module, path, name string) string {
	if path == "" {
		return filepath.Join(filepath.Dir(module), name)
	}
	return path
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// childEnvFor is the environment of a measured child process of kind: the module's path and pinned
// digest (computed here once, as a statement gives it to an agent) and its cache.
func childEnvFor(kind, module, digest, cache string) []string {
	return append(os.Environ(), childEnv+"="+kind, childEnv+"_MODULE="+module, childEnv+"_DIGEST="+digest, childEnv+"_CACHE="+cache)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "wordbench:", err)
	os.Exit(1)
}

// sample is one figure's value in each run.
type sample []float64

func (s sample) String() string {
	if len(s) == 0 {
		return "-"
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return fmt.Sprintf("%.3g (%.3g–%.3g)", c[len(c)/2], c[0], c[len(c)-1])
}

func median(s []float64) float64 {
	c := slices.Clone(s)
	slices.Sort(c)
	return c[len(c)/2]
}

// ratios divides a by b run by run: a ratio measured side by side in each run.
func ratios(a, b sample) sample {
	var r sample
	for i := range min(len(a), len(b)) {
		r = append(r, a[i]/b[i])
	}
	return r
}

// --- the two hosts -------------------------------------------------------------------------------

// caller runs the reference word once on a fresh instance.
type caller interface {
	call(ctx context.Context, input []byte) error
	close()
}

type lexiconHost struct {
	h   *wasm.Host
	mod *wasm.Module
}

// newLexicon loads the word into a new host. digest is the sha256 its statement pins, which an agent
// reads from the statement rather than computes.
func newLexicon(ctx context.Context, module []byte, digest string, iso wasm.Isolation, workers int, cacheDir string) (*lexiconHost, error) {
	cfg := wasm.Config{Isolation: iso, MaxWorkers: workers}
	if cacheDir != "" {
		cfg.CacheDir, cfg.CacheKeyFile = cacheDir, cacheDir+".key"
	}
	h, err := wasm.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m, err := manifest.Parse([]byte(refManifest))
	if err != nil {
		return nil, err
	}
	mod, err := h.Load(ctx, m, module, digest)
	if err != nil {
		h.Close()
		return nil, err
	}
	return &lexiconHost{h: h, mod: mod}, nil
}

func (l *lexiconHost) call(ctx context.Context, input []byte) error {
	res := l.mod.Run(ctx, input)
	if res.Outcome != wasm.Completed {
		return fmt.Errorf("%s: %s", res.Code, res.Message)
	}
	return nil
}

func (l *lexiconHost) close() { l.mod.Close(); l.h.Close() }

// extismHost holds the word the way the Extism Go SDK's documentation says to run one plugin
// concurrently: one CompiledPlugin, a fresh instance per call. The word's params go to stdin and its
// result comes from stdout, as in the word host; lexicon_v1 is provided (the reference word imports it
// but never calls it).
type extismHost struct {
	cp    *extism.CompiledPlugin
	cache wazero.CompilationCache
}

func newExtism(ctx context.Context, module []byte, cacheDir string) (*extismHost, error) {
	rc := wazero.NewRuntimeConfigCompiler()
	e := &extismHost{}
	if cacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			return nil, err
		}
		e.cache = c
		rc = rc.WithCompilationCache(c)
	}
	stub := func(_ context.Context, _ *extism.CurrentPlugin, stack []uint64) { stack[0] = 0 }
	i32 := extism.ValueTypeI32
	call := extism.NewHostFunctionWithStack("call", stub, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32})
	call.SetNamespace("lexicon_v1")
	take := extism.NewHostFunctionWithStack("take", stub, []api.ValueType{i32, i32}, []api.ValueType{i32})
	take.SetNamespace("lexicon_v1")
	cp, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: module}}},
		extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true}, []extism.HostFunction{call, take})
	if err != nil {
		return nil, err
	}
	e.cp = cp
	return e, nil
}

func (e *extismHost) call(ctx context.Context, input []byte) error {
	var out, errOut bytes.Buffer
	cfg := wazero.NewModuleConfig().WithStdin(bytes.NewReader(input)).WithStdout(&out).WithStderr(&errOut).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(rand.Reader).WithArgs("ref")
	p, err := e.cp.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: cfg})
	if err != nil {
		return err
	}
	defer p.Close(ctx)
	rc, _, err := p.CallWithContext(ctx, "_start", nil)
	if err != nil || rc != 0 {
		return fmt.Errorf("extism: rc %d: %v %s", rc, err, errOut.String())
	}
	if !json.Valid(bytes.TrimSpace(out.Bytes())) {
		return fmt.Errorf("extism: output %q", out.String())
	}
	return nil
}

func (e *extismHost) close() {
	e.cp.Close(context.Background())
	if e.cache != nil {
		e.cache.Close(context.Background())
	}
}

// --- fresh-state call ----------------------------------------------------------------------------

// freshCalls runs the three hosts in turn, run after run, so each run's ratio compares calls made
// under the same load.
func freshCalls(module []byte, runs, calls int) {
	ctx := context.Background()
	digest := sha256Hex(module)
	dir, _ := os.MkdirTemp("", "wordbench-")
	defer os.RemoveAll(dir)
	hosts := []struct {
		name string
		new  func() (caller, error)
	}{
		{"lexicon process (default)", func() (caller, error) {
			return newLexicon(ctx, module, digest, wasm.Process, 1, filepath.Join(dir, "lx"))
		}},
		{"lexicon inprocess", func() (caller, error) {
			return newLexicon(ctx, module, digest, wasm.InProcess, 1, filepath.Join(dir, "lx"))
		}},
		{"extism fresh instance", func() (caller, error) { return newExtism(ctx, module, filepath.Join(dir, "ex")) }},
	}
	p50 := make([]sample, len(hosts))
	cpu := make([]sample, len(hosts))
	var floor sample
	for range runs {
		f, err := guestRun(ctx, module, params, calls)
		if err != nil {
			fail(fmt.Errorf("guest run: %w", err))
		}
		floor = append(floor, f)
		for i, hc := range hosts {
			c, err := hc.new()
			if err != nil {
				fail(fmt.Errorf("%s: %w", hc.name, err))
			}
			for range 20 { // warm: worker started, code loaded, memory pooled
				if err := c.call(ctx, params); err != nil {
					fail(fmt.Errorf("%s: %w", hc.name, err))
				}
			}
			ds := make([]float64, 0, calls)
			c0 := cpuSelfAndChildren()
			for range calls {
				t := time.Now()
				if err := c.call(ctx, params); err != nil {
					fail(fmt.Errorf("%s: %w", hc.name, err))
				}
				ds = append(ds, float64(time.Since(t).Microseconds())/1000)
			}
			cpu[i] = append(cpu[i], float64((cpuSelfAndChildren()-c0).Microseconds())/1000/float64(calls))
			p50[i] = append(p50[i], median(ds))
			c.close()
		}
	}
	fmt.Printf("\nfresh-state call (new instance per call), %d runs of %d calls: median of run p50s (range)\n", runs, calls)
	for i, hc := range hosts {
		fmt.Printf("  %-28s p50 %s ms   cpu %s ms/call\n", hc.name, p50[i], cpu[i])
	}
	fmt.Printf("  extism / lexicon process     %s x faster (p50), %s x (cpu)   no goal: the ≥ 6x goal is now stated against the floor (below)\n", ratios(p50[2], p50[0]), ratios(cpu[2], cpu[0]))
	fmt.Printf("  extism / lexicon inprocess   %s x faster (p50)\n", ratios(p50[2], p50[1]))
	fmt.Printf("  guest's own run (floor)      p50 %s ms   (_start alone on a made instance, warm memory: no host running a fresh instance per call is faster)\n", floor)
	fmt.Printf("  extism / floor               %s x   the most any host can be faster than extism here\n", ratios(p50[2], floor))
	fmt.Printf("  lexicon process / floor      %s x   goal <= 1.15x\n", ratios(p50[0], floor))
	fmt.Printf("  lexicon inprocess / floor    %s x\n", ratios(p50[1], floor))
}

// guestRun is the floor of a fresh-state call: _start alone, timed on an instance made beforehand in
// memory already faulted in, so neither instantiation nor page faults nor any host's plumbing count.
// Whatever a host does around it, a call that runs a fresh instance's _start takes at least this.
func guestRun(ctx context.Context, module, input []byte, calls int) (float64, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	stub := api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) { s[0] = 0 })
	i32 := api.ValueTypeI32
	if _, err := rt.NewHostModuleBuilder("lexicon_v1").
		NewFunctionBuilder().WithGoModuleFunction(stub, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export("call").
		NewFunctionBuilder().WithGoModuleFunction(stub, []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("take").
		Instantiate(ctx); err != nil {
		return 0, err
	}
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		return 0, err
	}
	mem := &warmMemory{buf: make([]byte, 256<<20)}
	ctx = experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(_, _ uint64) experimental.LinearMemory { return mem }))
	ds := make([]float64, 0, calls)
	for i := range calls + 20 {
		var out bytes.Buffer
		cfg := wazero.NewModuleConfig().WithName("").WithStdin(bytes.NewReader(input)).WithStdout(&out).
			WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(rand.Reader).WithArgs("ref").WithStartFunctions()
		m, err := rt.InstantiateModule(ctx, cm, cfg)
		if err != nil {
			return 0, err
		}
		t := time.Now()
		_, err = m.ExportedFunction("_start").Call(ctx)
		d := time.Since(t)
		m.Close(ctx)
		var exit *sys.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 0) {
			return 0, err
		}
		if i >= 20 { // the first runs fault the memory in
			ds = append(ds, float64(d.Microseconds())/1000)
		}
	}
	return median(ds), nil
}

// starts times the guest's own start (guestRun) of three modules in turn, run after run: the bare
// wasip1 command (the Go runtime's own start), the empty word built with sdk/word (what the SDK and its
// imports add) and the reference word (the floor of the fresh-state call).
func starts(ref []byte, emptyPath, barePath string, runs, calls int) {
	ctx := context.Background()
	empty, err := os.ReadFile(emptyPath)
	if err != nil {
		fail(fmt.Errorf("%v (run make wasm)", err))
	}
	bare, err := os.ReadFile(barePath)
	if err != nil {
		fail(fmt.Errorf("%v (run make wasm)", err))
	}
	mods := []struct {
		name   string
		module []byte
		input  []byte
	}{
		{"bare wasip1 main", bare, params},
		{"empty word (sdk/word)", empty, []byte(`{}`)},
		{"reference word", ref, params},
	}
	p50 := make([]sample, len(mods))
	for range runs {
		for i, m := range mods {
			f, err := guestRun(ctx, m.module, m.input, calls)
			if err != nil {
				fail(fmt.Errorf("%s: %w", m.name, err))
			}
			p50[i] = append(p50[i], f)
		}
	}
	fmt.Printf("\nguest's own start (_start on a made instance, warm memory), %d runs of %d: median of run p50s (range)\n", runs, calls)
	for i, m := range mods {
		fmt.Printf("  %-28s p50 %s ms   %d KiB\n", m.name, p50[i], len(m.module)>>10)
	}
	fmt.Printf("  empty word / bare main       %s x   goal <= 1.3x\n", ratios(p50[1], p50[0]))
	fmt.Printf("  reference word / bare main   %s x\n", ratios(p50[2], p50[0]))
}

// warmMemory is one linear memory reused by every instance, zeroed when given back, so its pages stay
// faulted in.
type warmMemory struct {
	buf  []byte
	high uint64
}

func (m *warmMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	m.high = max(m.high, size)
	return m.buf[:size:size]
}

func (m *warmMemory) Free() { clear(m.buf[:m.high]); m.high = 0 }

// cpuSelfAndChildren is the CPU this process and its live workers have used.
func cpuSelfAndChildren() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	for _, pid := range descendants(os.Getpid()) {
		t += procCPU(pid)
	}
	return t
}

// --- first call ----------------------------------------------------------------------------------

// firstCalls times the first call of a new process, on a quiet machine or, with busy, beside a CPU
// burner (burn) that keeps one core busy for the whole figure: a node's agent starts words while the
// machine works, and a host that wins only on idle cores does not win.
func firstCalls(module, digest string, runs, n int, busy bool) {
	exe, err := os.Executable()
	if err != nil {
		fail(err)
	}
	dir, _ := os.MkdirTemp("", "wordbench-first-")
	defer os.RemoveAll(dir)
	kinds := []string{"first-lexicon-process", "first-lexicon-inprocess", "first-extism"}
	names := []string{"lexicon process (default)", "lexicon inprocess", "extism"}
	start := func(kind string) (time.Duration, time.Duration, error) {
		cmd := exec.Command(exe)
		cmd.Env = childEnvFor(kind, module, digest, filepath.Join(dir, kind))
		t := time.Now()
		out, err := cmd.CombinedOutput()
		wall := time.Since(t)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %v: %s", kind, err, out)
		}
		return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
	}
	for _, k := range kinds { // fill each cache
		if _, _, err := start(k); err != nil {
			fail(err)
		}
	}
	machine := "no burner (load as printed above)"
	if busy {
		stop := burn(exe)
		defer stop()
		machine = "busy: a CPU burner spinning one core"
	}
	wall := make([]sample, len(kinds))
	cpu := make([]sample, len(kinds))
	for range runs {
		ws := make([][]float64, len(kinds))
		cs := make([][]float64, len(kinds))
		for range n {
			for i, k := range kinds { // interleaved, so every host meets the same load
				w, c, err := start(k)
				if err != nil {
					fail(err)
				}
				ws[i] = append(ws[i], float64(w.Microseconds())/1000)
				cs[i] = append(cs[i], float64(c.Microseconds())/1000)
			}
		}
		for i := range kinds {
			wall[i] = append(wall[i], median(ws[i]))
			cpu[i] = append(cpu[i], median(cs[i]))
		}
	}
	fmt.Printf("\nfirst call in a new process, warm compile cache (exec to exit), %s, %d runs of %d: median (range)\n", machine, runs, n)
	for i := range kinds {
		fmt.Printf("  %-28s wall %s ms   cpu %s ms\n", names[i], wall[i], cpu[i])
	}
	fmt.Printf("  lexicon process / extism     %s x (wall), %s x (cpu)   goal <= 1x\n", ratios(wall[0], wall[2]), ratios(cpu[0], cpu[2]))
	fmt.Printf("  lexicon inprocess / extism   %s x (wall), %s x (cpu)\n", ratios(wall[1], wall[2]), ratios(cpu[1], cpu[2]))
}

// burn starts a child that spins one thread until stopped: one core of the machine busy. The burner is
// a process of its own so its CPU is not counted as the measured children's.
func burn(exe string) (stop func()) {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=burn", "GOMAXPROCS=1")
	if err := cmd.Start(); err != nil {
		fail(fmt.Errorf("burner: %w", err))
	}
	return func() { cmd.Process.Kill(); cmd.Wait() }
}

// spin keeps one core busy until the process is killed.
func spin() int {
	x := uint64(1)
	for {
		x = x*6364136223846793005 + 1442695040888963407
		if x == 0 {
			return 0 // never: keeps the loop from being optimised away
		}
	}
}

// --- RSS per running word ------------------------------------------------------------------------

// rssWords is how many words run at once in the RSS figure.
const rssWords = 4

func rssPerWord(module, digest string, runs int) {
	exe, err := os.Executable()
	if err != nil {
		fail(err)
	}
	dir, _ := os.MkdirTemp("", "wordbench-rss-")
	defer os.RemoveAll(dir)
	kinds := []string{"rss-lexicon-process", "rss-lexicon-inprocess", "rss-extism"}
	names := []string{"lexicon process (default)", "lexicon inprocess", "extism"}
	per := make([]sample, len(kinds))
	for r := range runs + 1 {
		for i, k := range kinds {
			cmd := exec.Command(exe)
			cmd.Env = childEnvFor(k, module, digest, filepath.Join(dir, k))
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				fail(fmt.Errorf("%s: %v", k, err))
			}
			if r == 0 {
				continue // the first run fills the caches
			}
			kib, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
			if err != nil {
				fail(fmt.Errorf("%s: %q", k, out))
			}
			per[i] = append(per[i], kib/1024)
		}
	}
	fmt.Printf("\nRSS per concurrently running word (%d held at once, peak minus the loaded host, over %d), %d runs: median (range)\n", rssWords, rssWords, runs)
	for i := range kinds {
		fmt.Printf("  %-28s %s MiB/word\n", names[i], per[i])
	}
	fmt.Printf("  lexicon process / extism     %s x   goal <= 16 MiB/word\n", ratios(per[0], per[2]))
}

// --- children ------------------------------------------------------------------------------------

func child(kind string) int {
	if kind == "burn" {
		return spin()
	}
	ctx := context.Background()
	module, err := os.ReadFile(os.Getenv(childEnv + "_MODULE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	cache := os.Getenv(childEnv + "_CACHE")
	var c caller
	switch strings.TrimPrefix(strings.TrimPrefix(kind, "first-"), "rss-") {
	case "lexicon-process":
		workers := 1
		if strings.HasPrefix(kind, "rss-") {
			workers = rssWords
		}
		c, err = newLexicon(ctx, module, os.Getenv(childEnv+"_DIGEST"), wasm.Process, workers, cache)
	case "lexicon-inprocess":
		c, err = newLexicon(ctx, module, os.Getenv(childEnv+"_DIGEST"), wasm.InProcess, rssWords, cache)
	case "extism":
		c, err = newExtism(ctx, module, cache)
	default:
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	defer c.close()
	if strings.HasPrefix(kind, "first-") {
		if err := c.call(ctx, params); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 5
		}
		return 0
	}
	// RSS: the loaded host is the base; n words held in flight at once, the peak of this process and
	// its workers while they run.
	if err := c.call(ctx, params); err != nil { // a first call, so both hosts have run the word once
		fmt.Fprintln(os.Stderr, err)
		return 5
	}
	base := rssTree(os.Getpid())
	var wg sync.WaitGroup
	errs := make(chan error, rssWords)
	for range rssWords {
		wg.Go(func() {
			if err := c.call(ctx, []byte(`{"name": "rss", "hold_ms": 500}`)); err != nil {
				errs <- err
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var peak int64
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
sample:
	for {
		select {
		case <-done:
			break sample
		case <-tick.C:
			peak = max(peak, rssTree(os.Getpid()))
		}
	}
	close(errs)
	for err := range errs {
		fmt.Fprintln(os.Stderr, err)
		return 6
	}
	fmt.Println((peak - base) / rssWords)
	return 0
}

// --- /proc ---------------------------------------------------------------------------------------

// descendants lists the processes below pid (the host's workers).
func descendants(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
				out = append(out, descendants(c)...)
			}
		}
	}
	return out
}

// rssTree is the resident memory of pid and its descendants, KiB.
func rssTree(pid int) int64 {
	t := rssKiB(pid)
	for _, c := range descendants(pid) {
		t += rssKiB(c)
	}
	return t
}

func rssKiB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

// procCPU is the user and system time pid has used.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
