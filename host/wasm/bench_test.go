package wasm_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
)

// The figures the issue asks for (make bench): each benchmark reports the median (p50) of its calls;
// run with -benchtime 400x -count 5 and take the median of the runs.

var benchParams = []byte(`{"name": "bench", "count": 1}`)

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func reportP50(b *testing.B, ds []time.Duration) {
	b.ReportMetric(float64(p50(ds).Microseconds())/1000, "p50-ms")
	b.ReportMetric(0, "ns/op") // the mean hides the distribution; p50 is the figure
}

// cpuTime is the CPU this process and the host's workers have used: on a machine shared with other
// work, wall-clock medians inflate with the load and CPU per call does not.
func cpuTime(h *wasm.Host) time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	for _, pid := range wasm.WorkerPIDs(h) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		t += time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
	}
	return t
}

func benchCalls(b *testing.B, h *wasm.Host) {
	module, digest := testWord(b, "ref")
	mod := load(b, h, wordManifest(b, "ref", refParams), module, digest)
	for range 20 { // warm: worker started, code loaded, memory pooled
		mod.Run(context.Background(), benchParams)
	}
	ds := make([]time.Duration, 0, b.N)
	cpu0 := cpuTime(h)
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		res := mod.Run(context.Background(), benchParams)
		ds = append(ds, time.Since(t))
		if res.Outcome != wasm.Completed {
			b.Fatalf("%s %s", res.Code, res.Message)
		}
	}
	b.StopTimer()
	reportP50(b, ds)
	b.ReportMetric(float64((cpuTime(h)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkCall is a fresh-state call of the reference word: a new instance, params in, result out.
//   - nodeadline: in process, no deadline enforcement at all (the baseline; unsafe, never offered)
//   - inprocess: in process, wazero's close-on-deadline checks compiled into every loop
//   - process: in a supervised worker process killed at the deadline (the default)
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	b.Run("nodeadline", func(b *testing.B) {
		h, err := wasm.NewWithoutDeadline(ctx, cached(wasm.Config{}))
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		benchCalls(b, h)
	})
	b.Run("inprocess", func(b *testing.B) { benchCalls(b, newHost(b, cached(wasm.Config{Isolation: wasm.InProcess}))) })
	b.Run("process", func(b *testing.B) {
		benchCalls(b, newHost(b, cached(wasm.Config{Isolation: wasm.Process, MaxWorkers: 1})))
	})
}

// BenchmarkDeadlineOvershoot is how long after its deadline a runaway word is stopped (ms precision).
func BenchmarkDeadlineOvershoot(b *testing.B) {
	for _, iso := range []struct {
		name string
		iso  wasm.Isolation
	}{{"process", wasm.Process}, {"inprocess", wasm.InProcess}} {
		b.Run(iso.name, func(b *testing.B) {
			module, digest := testWord(b, "evil")
			h := newHost(b, cached(wasm.Config{Isolation: iso.iso}))
			const wall = 100 * time.Millisecond
			mod := load(b, h, wordManifest(b, "evil", evilManifest(b, "look", nil, map[string]any{"wall_time_ms": wall.Milliseconds()})), module, digest)
			var over []time.Duration
			b.ResetTimer()
			for range b.N {
				res := mod.Run(context.Background(), []byte(`{"attack": "loop"}`))
				// The word's own time: a worker killed at the deadline is replaced before the next
				// call, which is the host's time, not the word's.
				over = append(over, time.Duration(res.DurationMS)*time.Millisecond-wall)
				if res.Code != "word.deadline_exceeded" {
					b.Fatalf("%s", res.Code)
				}
			}
			reportP50(b, over)
			b.ReportMetric(float64(slices.Max(over).Microseconds())/1000, "max-ms")
		})
	}
}

// firstCallEnv makes the test binary, started by BenchmarkFirstCall, load the reference word into a
// new host with a warm disk cache, run it once and exit.
const firstCallEnv = "LEXICON_WASM_BENCH_FIRST_CALL"

func firstCall(iso string) int {
	ctx := context.Background()
	module, err := os.ReadFile(os.Getenv(firstCallEnv + "_MODULE"))
	if err != nil {
		return 3
	}
	cfg := wasm.Config{CacheDir: os.Getenv(firstCallEnv + "_CACHE"), CacheKeyFile: os.Getenv(firstCallEnv+"_CACHE") + ".key"}
	if iso == "inprocess" {
		cfg.Isolation = wasm.InProcess
	}
	h, err := wasm.New(ctx, cfg)
	if err != nil {
		return 4
	}
	defer h.Close()
	m, err := manifest.Parse([]byte(`{"schema": "lexicon/manifest/v1", "name": "ref", "kind": "word", "version": "1.0.0",
		"class": "look", "summary": "Reference word.", "params": {"type": "object", "additionalProperties": false,
		"properties": {"name": {"type": "string"}, "count": {"type": "integer"}}},
		"output": {"type": "object"}, "module": {"file": "ref.wasm"}}`))
	if err != nil {
		return 8
	}
	mod, err := h.Load(ctx, m, module, sha256Of(module))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 5
	}
	if res := mod.Run(ctx, benchParams); res.Outcome != wasm.Completed {
		return 6
	}
	if s := h.CacheStats(); s.Hits != 1 {
		fmt.Fprintln(os.Stderr, "cache was not warm:", s)
		return 7
	}
	return 0
}

// BenchmarkFirstCall is a new process's first call with a warm disk cache: from exec of a fresh
// process to its exit, having created a host, loaded the word from the cache and run it once.
func BenchmarkFirstCall(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	module, _ := testWord(b, "ref")
	modPath := filepath.Join(b.TempDir(), "ref.wasm")
	os.WriteFile(modPath, module, 0o644)
	for _, iso := range []string{"process", "inprocess"} {
		b.Run(iso, func(b *testing.B) {
			cache := filepath.Join(b.TempDir(), "cache")
			// cpu is the CPU the process and its worker used: wall time on a loaded machine is mostly
			// waiting to be scheduled.
			run := func() (cpu time.Duration, err error) {
				cmd := exec.Command(exe)
				cmd.Env = append(os.Environ(), firstCallEnv+"="+iso, firstCallEnv+"_MODULE="+modPath, firstCallEnv+"_CACHE="+cache)
				out, err := cmd.CombinedOutput()
				if err != nil {
					return 0, fmt.Errorf("%v: %s", err, out)
				}
				return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
			}
			run() // fill the cache (this first run compiles and exits 7)
			var ds, cpus []time.Duration
			b.ResetTimer()
			for range b.N {
				t := time.Now()
				cpu, err := run()
				if err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t))
				cpus = append(cpus, cpu)
			}
			reportP50(b, ds)
			b.ReportMetric(float64(p50(cpus).Microseconds())/1000, "cpu-ms")
		})
	}
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

// BenchmarkRSSPerWord is the resident memory each concurrently running word costs: n words held in
// flight at once by a fresh host, the peak RSS of the host and its workers while they run, minus the
// host's own RSS once the word is loaded, divided by n. With process isolation the n runs share one
// worker process (a worker takes up to RunsPerWorker), which is counted whole; MiB/worker is its part.
func BenchmarkRSSPerWord(b *testing.B) {
	const n = 4
	for _, iso := range []struct {
		name string
		iso  wasm.Isolation
	}{{"process", wasm.Process}, {"inprocess", wasm.InProcess}} {
		b.Run(iso.name, func(b *testing.B) {
			module, digest := testWord(b, "ref")
			var per, workers []time.Duration // KiB, carried in a Duration to reuse p50
			for range b.N {
				h, err := wasm.New(context.Background(), cached(wasm.Config{Isolation: iso.iso, MaxWorkers: n}))
				if err != nil {
					b.Fatal(err)
				}
				mod, err := h.Load(context.Background(), wordManifest(b, "ref", refParams), module, digest)
				if err != nil {
					b.Fatal(err)
				}
				base := rssKiB(os.Getpid())
				total := func() (int64, int64) {
					sum, ws := rssKiB(os.Getpid()), int64(0)
					if iso.iso == wasm.Process {
						for _, p := range wasm.WorkerPIDs(h) {
							ws += rssKiB(p)
						}
					}
					return sum + ws, ws
				}
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() { mod.Run(context.Background(), []byte(`{"name": "rss", "hold_ms": 500}`)) })
				}
				// Sample while they run and keep the peak.
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				var peak, peakWorkers int64
				tick := time.NewTicker(5 * time.Millisecond)
			sample:
				for {
					select {
					case <-done:
						break sample
					case <-tick.C:
						if t, w := total(); t > peak {
							peak, peakWorkers = t, w
						}
					}
				}
				tick.Stop()
				per = append(per, time.Duration((peak-base)/n))
				workers = append(workers, time.Duration(peakWorkers/n))
				mod.Close()
				h.Close()
			}
			b.ReportMetric(float64(p50(per))/1024, "MiB/word")
			if iso.iso == wasm.Process {
				b.ReportMetric(float64(p50(workers))/1024, "MiB/worker")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}
