// Command idlebench measures what an idle agent costs its machine (`make bench`): it runs fleet in a
// box (`make demo`: a plane on SQLite, one real agent paired with it, two jobs run), then leaves the
// agent idle and reads, from /proc, the resident memory of the agent and its wasm workers together and
// the CPU they use over the idle window.
//
//	idlebench -demo build/tools/fleet-in-a-box -bin build/bin -modules build/modules [-window 10m] [-runs 1]
//
// The window starts when the demo's jobs have ended and the agent has put its vocabulary in the compile
// cache (-settle), as a person trying `make demo` would then leave it. It lasts ten minutes by default:
// an idle agent's CPU goes mostly to its recipe checks (unit_health every 5 minutes, disk_headroom every
// 10), each a worker start and a module load, and a shorter window measures whether it happened to hold
// one rather than what idling costs. The RSS figure is the sum at the end of the window; the CPU figure
// is the share of one core the agent and its workers (those still running and those already reaped)
// used over it, split between the agent itself and its workers, with the worker starts seen (the
// descendants are looked at every second; a worker lives at least its ten idle seconds), and the
// machine's load average, without which a shared machine's CPU figures cannot be compared.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	demo := flag.String("demo", "build/tools/fleet-in-a-box", "the fleet-in-a-box binary")
	bin := flag.String("bin", "build/bin", "the built binaries")
	modules := flag.String("modules", "build/modules", "the staged modules")
	window := flag.Duration("window", 10*time.Minute, "how long the agent is left idle (10m spans a cycle of the 5- and 10-minute recipes)")
	runs := flag.Int("runs", 1, "runs")
	settle := flag.String("settle", "vocabulary in the compile cache", "start the idle window once the agent's log holds this (empty: at once)")
	flag.Parse()
	var rss, agentRSS, cpu, agentCPU, workers, starts, load []float64
	for range *runs {
		r, err := run(*demo, *bin, *modules, *settle, *window)
		if err != nil {
			fmt.Fprintln(os.Stderr, "idlebench:", err)
			os.Exit(1)
		}
		rss = append(rss, r.rssKiB/1024)
		agentRSS = append(agentRSS, r.agentKiB/1024)
		cpu = append(cpu, r.cpuShare*100)
		agentCPU = append(agentCPU, r.agentShare*100)
		workers = append(workers, float64(r.workers))
		starts = append(starts, float64(r.starts))
		load = append(load, r.load)
	}
	fmt.Printf("\nidle agent after make demo, %s idle, %d runs: median (range)\n", *window, *runs)
	fmt.Printf("  RSS, agent and workers        %s MiB   goal <= 40 MiB\n", show(rss))
	fmt.Printf("  RSS, agent alone              %s MiB\n", show(agentRSS))
	fmt.Printf("  workers alive at the end      %s\n", show(workers))
	fmt.Printf("  CPU, agent and workers        %s %% of one core   goal <= 0.1%%\n", show(cpu))
	fmt.Printf("  CPU, agent alone              %s %% of one core\n", show(agentCPU))
	fmt.Printf("  worker starts in the window   %s\n", show(starts))
	fmt.Printf("  load average (5 min) at end   %s   on %d CPUs: CPU figures grow with the machine's load\n", show(load), runtime.NumCPU())
}

func show(s []float64) string {
	c := slices.Clone(s)
	slices.Sort(c)
	return fmt.Sprintf("%.3g (%.3g–%.3g)", c[len(c)/2], c[0], c[len(c)-1])
}

type result struct {
	rssKiB, agentKiB     float64
	cpuShare, agentShare float64
	workers, starts      int
	load                 float64 // the machine's 5-minute load average at the end of the window
}

func logHas(path, s string) bool {
	b, _ := os.ReadFile(path)
	return strings.Contains(string(b), s)
}

func run(demo, bin, modules, settle string, window time.Duration) (result, error) {
	dir, err := os.MkdirTemp("", "idlebench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute+window)
	defer cancel()
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	cmd := exec.CommandContext(ctx, abs(demo))
	cmd.Env = append(os.Environ(), "DEMO_BIN="+abs(bin), "DEMO_MODULES="+abs(modules), "DEMO_DIR="+dir,
		"DEMO_LISTEN=127.0.0.1:"+strconv.Itoa(port))
	cmd.Stderr = os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "keep running") {
			ready = true
			break
		}
	}
	if !ready {
		return result{}, fmt.Errorf("the demo ended before it was ready (see %s)", dir)
	}
	go func() { // keep draining, so the demo never blocks on its stdout
		for sc.Scan() {
		}
	}()
	agent := findAgent(cmd.Process.Pid)
	if agent == 0 {
		return result{}, fmt.Errorf("no lexicon-agent below the demo")
	}
	if settle != "" {
		// The agent compiles its vocabulary in the background once it accepts a statement (a fresh
		// demo starts with an empty compile cache): idle starts once that is done.
		t := time.Now()
		for !logHas(filepath.Join(dir, "agent.log"), settle) {
			if time.Since(t) > 10*time.Minute {
				return result{}, fmt.Errorf("the agent never logged %q", settle)
			}
			time.Sleep(time.Second)
		}
		fmt.Printf("agent settled %s after the demo\n", time.Since(t).Round(time.Second))
	}
	c0, a0 := treeCPU(agent), procCPU(agent, false)
	t0 := time.Now()
	seen := map[int]bool{}
	for _, w := range descendants(agent) {
		seen[w] = true
	}
	starts := 0
	for time.Since(t0) < window {
		time.Sleep(min(time.Second, window-time.Since(t0)))
		for _, w := range descendants(agent) {
			if !seen[w] {
				seen[w] = true
				starts++
			}
		}
	}
	c1, a1 := treeCPU(agent), procCPU(agent, false)
	took := time.Since(t0)
	if rssKiB(agent) == 0 {
		return result{}, fmt.Errorf("the agent exited during the idle window (see %s)", dir)
	}
	ws := descendants(agent)
	r := result{agentKiB: float64(rssKiB(agent)), workers: len(ws), starts: starts,
		cpuShare: float64(c1-c0) / float64(took), agentShare: float64(a1-a0) / float64(took)}
	r.rssKiB = r.agentKiB
	r.load = loadAvg()
	for _, w := range ws {
		r.rssKiB += float64(rssKiB(w))
	}
	fmt.Printf("run: agent %.1f MiB, %d workers, total %.1f MiB, cpu %.3f%% of one core (agent alone %.3f%%, %d worker starts) over %s, load average %.2f\n",
		r.agentKiB/1024, r.workers, r.rssKiB/1024, r.cpuShare*100, r.agentShare*100, starts, took.Round(time.Millisecond), r.load)
	return r, nil
}

// loadAvg is the machine's 5-minute load average (0 if unreadable): on a shared machine a worker's
// CPU per start grows with it, so a figure is read with it.
func loadAvg() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[1], 64)
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// findAgent is the `lexicon-agent run` process below pid.
func findAgent(pid int) int {
	for _, p := range descendants(pid) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "lexicon-agent" && args[1] == "run" {
			return p
		}
	}
	return 0
}

// treeCPU is the CPU pid has used, with that of its children reaped so far and those still running.
func treeCPU(pid int) time.Duration {
	t := procCPU(pid, true)
	for _, c := range descendants(pid) {
		t += procCPU(c, false)
	}
	return t
}

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

// procCPU is pid's user and system time, with its reaped children's when reaped is set.
func procCPU(pid int, reaped bool) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var ticks int64
	fields := []int{11, 12} // utime, stime
	if reaped {
		fields = append(fields, 13, 14) // cutime, cstime
	}
	for _, i := range fields {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
