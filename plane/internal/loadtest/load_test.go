package loadtest_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// Sizes of the simulated fleet; LEXICON_LOAD_AGENTS overrides the connected count.
const (
	roundTripAgents = 500
	roundTripJobs   = 40 // per round-trip agent
	idleWindow      = 10 * time.Second
	dispatchJobs    = 400
	pgbenchClients  = 16
	pgbenchSeconds  = 12
)

// Databases of their own on the test server: the load's transaction count (pg_stat_database) is then
// the plane's alone, and pgbench's tables never meet the plane's. pgbench gets a database for each run
// (pgbenchDatabase_<nanoseconds>, dropped at the end), since it initialises its tables in the default
// schema: two harnesses at once sharing one dropped each other's tables mid-run.
const (
	loadDatabase    = "lexicon_load"
	pgbenchDatabase = "lexicon_pgbench"
	planeAppName    = "lexicon-load-plane"
)

var noop = channel.Word{Name: "noop", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}

// BenchmarkFleet runs the whole scenario once per store and reports its figures as metrics.
//
// PostgreSQL: LEXICON_LOAD_AGENTS (10,000 by default) agents connect on long poll; the plane's idle
// CPU, RSS and dispatch latency are measured with them held; then 500 agents work through queued jobs
// as fast as they can, and pgbench -N runs against the same server right after, in the same run: the
// ratio of the two is the figure that moves little from machine to machine. SQLite: the round trips
// only (its wake-ups do not cross processes, so dispatch cannot be timed from outside the plane).
//
// LEXICON_PLANE_SRC builds the plane from another source tree (a checkout of an older commit), so
// that one harness measures before and after.
func BenchmarkFleet(b *testing.B) {
	stores := []string{"postgres", "sqlite"}
	if s := os.Getenv("LEXICON_LOAD_STORES"); s != "" {
		stores = strings.Split(s, ",")
	}
	for _, kind := range stores {
		b.Run(kind, func(b *testing.B) { fleet(b, kind) })
	}
}

func fleet(b *testing.B, kind string) {
	ctx := context.Background()
	dir := b.TempDir()
	var url, planeURL string
	var pg *pgServer
	switch kind {
	case "postgres":
		pg = postgres(b)
		url, planeURL = pg.url, pg.url+"&application_name="+planeAppName
	case "sqlite":
		url = filepath.Join(dir, "plane.db")
		planeURL = url
	default:
		b.Fatalf("unknown store %q", kind)
	}
	agents := 0
	if pg != nil {
		agents = 10000
		if n, err := strconv.Atoi(os.Getenv("LEXICON_LOAD_AGENTS")); err == nil && n > 0 {
			agents = n
		}
	}
	// The plane first: it migrates the store to its own version, which an older plane (LEXICON_PLANE_SRC)
	// needs; the harness's newer migrations only add what the older plane does not read.
	plane := startPlane(b, dir, planeURL)
	st, err := open.URL(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	fleet := enrol(b, st, max(agents, roundTripAgents))
	client := plane.client(max(agents, roundTripAgents))

	if agents > 0 {
		hold(b, st, plane, client, fleet[:agents])
	}

	// Sustained round trips: a subset of agents works through queued jobs as fast as it can. Each
	// reports its vocabulary first (a busy claim, answered at once), as a job is queued only for a
	// node that reports the word.
	rt := fleet[:roundTripAgents]
	var reported sync.WaitGroup
	for _, a := range rt {
		reported.Go(func() {
			busy := a.claim()
			busy.Idle = false
			var resp channel.ClaimResponse
			if err := a.send(ctx, client, plane.url, channel.PathClaim, busy, &resp); err != nil {
				b.Error(err)
				return
			}
			a.heard(&resp)
		})
	}
	reported.Wait()
	if b.Failed() {
		return
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("LEXICON_LOAD_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	var figs []roundFigures
	for range rounds {
		figs = append(figs, roundTrips(b, kind, st, plane, client, pg, rt))
	}
	report := func(name string, pick func(roundFigures) float64) (med, lo, hi float64) {
		var v []float64
		for _, f := range figs {
			v = append(v, pick(f))
		}
		slices.Sort(v)
		med, lo, hi = v[len(v)/2], v[0], v[len(v)-1]
		b.ReportMetric(med, name)
		return med, lo, hi
	}
	m, lo, hi := report("roundtrips/s", func(f roundFigures) float64 { return f.perSec })
	line := fmt.Sprintf("fleet load (%s), %d rounds, median (range): %.0f (%.0f–%.0f) round trips/s", kind, rounds, m, lo, hi)
	if figs[0].statements > 0 {
		m, lo, hi = report("statements/roundtrip", func(f roundFigures) float64 { return f.statements })
		line += fmt.Sprintf("; %.2f (%.2f–%.2f) statements per round trip", m, lo, hi)
	}
	if figs[0].steady > 0 {
		m, lo, hi = report("steady-statements/roundtrip", func(f roundFigures) float64 { return f.steady })
		line += fmt.Sprintf(", %.3f (%.3f–%.3f) in the steady state %s", m, lo, hi, steadyGoal(kind))
		m, lo, hi = report("steady-statements-net/roundtrip", func(f roundFigures) float64 { return f.steady - f.background })
		line += fmt.Sprintf(", %.3f (%.3f–%.3f) without the plane's own while idle", m, lo, hi)
	}
	m, lo, hi = report("ratio-to-store-ceiling", func(f roundFigures) float64 { return f.perSec / f.ceiling })
	line += fmt.Sprintf("; plane / store alone %.3f (%.3f–%.3f)", m, lo, hi)
	if pg == nil {
		line += " (goal ≥ 0.5)"
	} else {
		m, lo, hi = report("ratio-to-pgbench", func(f roundFigures) float64 { return f.perSec / f.pgbench })
		line += fmt.Sprintf("; round trips / pgbench -N tps %.3f (%.3f–%.3f) (goal ≥ 0.6)", m, lo, hi)
		m, lo, hi = report("store-ceiling-to-pgbench", func(f roundFigures) float64 { return f.ceiling / f.pgbench })
		line += fmt.Sprintf("; store alone / pgbench -N tps %.3f (%.3f–%.3f), the plane's bound", m, lo, hi)
	}
	fmt.Println(line)
}

// steadyGoal labels the steady state's statements per round trip: the goal of 3 is PostgreSQL's, whose
// finish-and-claim records the nonce in a CTE; SQLite has none, so its nonce is a statement of its own.
func steadyGoal(kind string) string {
	if kind == "sqlite" {
		return "(4 by design: no data-modifying CTEs)"
	}
	return "(goal ≤ 3)"
}

// roundFigures are one round's: round trips per second, statements per round trip (0: not counted),
// and the store alone and pgbench (PostgreSQL) in the same round.
type roundFigures struct {
	perSec, statements, steady, background, ceiling, pgbench float64
}

// midSample is the plane's statement count when done jobs were finished.
type midSample struct {
	done  int64
	at    time.Time
	stats planeStats
}

// roundTrips queues jobs for rt and times the agents working through them, then the store alone on
// the same pattern and, on PostgreSQL, pgbench -N; it prints the round's figures.
func roundTrips(b *testing.B, kind string, st store.Store, plane *plane, client *http.Client, pg *pgServer, rt []*simAgent) roundFigures {
	ctx := context.Background()
	var fig roundFigures
	// The plane's own statements while no agent works (its engines, expiry, heartbeat), over at least
	// idleWindow: what the steady state's count holds that no round trip caused.
	idleStart, idle := time.Now(), plane.statements()
	queue(b, st, rt, roundTripJobs)
	time.Sleep(idleWindow - time.Since(idleStart))
	total := int64(len(rt) * roundTripJobs)
	var done atomic.Int64
	work, stop := context.WithCancel(ctx)
	before := sample(plane, pg)
	idleRate := float64(before.stats.statements-idle.statements) / time.Since(idleStart).Seconds()
	var watch *pgWatch
	if pg != nil {
		watch = pg.watch(b)
	}
	start := time.Now()
	// The steady state: from when every agent has finished its first job (none is on its first claim)
	// until the first agent finishes its last (none is on its last long poll, or out of work).
	mid := make(chan midSample, 2)
	var begun atomic.Int64
	var ended atomic.Bool
	var wg sync.WaitGroup
	for _, a := range rt {
		wg.Go(func() {
			mine := 0
			a.work(work, client, plane.url, func() {
				n := done.Add(1)
				mine++
				steady := mine == 1 && begun.Add(1) == int64(len(rt)) ||
					mine == roundTripJobs && ended.CompareAndSwap(false, true)
				if steady {
					go func() { mid <- midSample{done.Load(), time.Now(), plane.statements()} }()
				}
				if n == total {
					stop()
				}
			})
		})
	}
	wg.Wait()
	stop()
	elapsed := time.Since(start)
	var pgPlane, pgAll time.Duration
	if watch != nil {
		pgPlane, pgAll = watch.stop()
	}
	after := sample(plane, pg)
	n := float64(done.Load())
	perSec := n / elapsed.Seconds()

	cpu := func(d time.Duration) float64 { return 100 * d.Seconds() / elapsed.Seconds() }
	fig.perSec = perSec
	line := fmt.Sprintf("fleet load (%s): %.0f job round trips/s (%d agents, %d jobs); CPU %% of one core: plane %.0f, load generator %.0f",
		kind, perSec, len(rt), int64(n), cpu(after.plane-before.plane), cpu(after.self-before.self))
	if pg != nil {
		line += fmt.Sprintf(", postgres backends of the plane %.0f, all postgres processes %.0f (other users' included)",
			cpu(pgPlane), cpu(pgAll))
	}
	if after.stats.ok && before.stats.ok {
		fig.statements = float64(after.stats.statements-before.stats.statements) / n
		tx := float64(after.stats.transactions-before.stats.transactions) / n
		line += fmt.Sprintf("; %.2f statements and %.2f explicit transactions per round trip (plane's counter)", fig.statements, tx)
		var m [2]midSample
		for i := range m {
			select {
			case m[i] = <-mid:
			case <-time.After(5 * time.Second): // a round cut short never reached both marks
			}
		}
		m1, m2 := m[0], m[1]
		if m1.done > m2.done {
			m1, m2 = m2, m1
		}
		if m1.stats.ok && m2.stats.ok && m2.done > m1.done {
			jobs := float64(m2.done - m1.done)
			fig.steady = float64(m2.stats.statements-m1.stats.statements) / jobs
			fig.background = idleRate * m2.at.Sub(m1.at).Seconds() / jobs
			line += fmt.Sprintf(", %.3f in the steady state %s, of which %.3f the plane's own while no agent worked (%.1f statements/s)",
				fig.steady, steadyGoal(kind), fig.background, idleRate)
		}
	} else {
		line += "; statements per round trip: the plane does not count them"
	}
	if pg != nil {
		commits := float64(after.commits-before.commits) / n
		line += fmt.Sprintf("; %.2f PostgreSQL transactions per round trip (pg_stat_database)", commits)
	}
	fmt.Println(line)

	// The same commit pattern without the plane, in the same run: SQLite's ceiling (it has no pgbench),
	// and on PostgreSQL what the plane's HTTP, TLS and signatures cost beside it.
	ceiling := storeCeiling(b, st, rt, roundTripJobs)
	fig.ceiling = ceiling
	goal := ""
	if pg == nil {
		goal = " (goal ≥ 0.5)"
	}
	fmt.Printf("fleet load (%s): the store alone, same statements and commits per round trip, %d agents, in the same run: %.0f round trips/s; plane / store = %.3f%s\n",
		kind, len(rt), ceiling, perSec/ceiling, goal)

	if pg != nil {
		tps := pg.pgbench(b)
		fig.pgbench = tps
		// The store alone over pgbench bounds the plane's ratio: the plane runs the same statements and
		// commits and adds its HTTP, TLS, signatures and JSON (and its simulated agents') on the same cores.
		fmt.Printf("fleet load (%s): pgbench -N -M prepared -c %d in the same run: %.0f tps; round trips / pgbench tps = %.3f (goal ≥ 0.6); store alone / pgbench tps = %.3f (the plane's bound)\n",
			kind, pgbenchClients, tps, perSec/tps, ceiling/tps)
	}
	return fig
}

// hold connects every agent on long poll, measures the plane idle under them, then times dispatches.
func hold(b *testing.B, st store.Store, plane *plane, client *http.Client, fleet []*simAgent) {
	ctx := context.Background()
	lg, cancel := context.WithCancel(ctx)
	defer cancel()
	received := make([]chan time.Time, len(fleet))
	var connected sync.WaitGroup // done once every agent's first claim is written to the plane
	connected.Add(len(fleet))
	var wg sync.WaitGroup
	for i := range fleet {
		received[i] = make(chan time.Time, 64)
		wg.Go(func() { fleet[i].poll(lg, client, plane.url, &connected, received[i]) })
		if i%200 == 199 {
			// Pacing of the load generator, not synchronisation: ramp TLS handshakes instead of a
			// thundering herd.
			time.Sleep(50 * time.Millisecond)
		}
	}
	connected.Wait()
	// Part of the measurement, not synchronisation: the idle figures below exclude the plane's work on
	// the first wave of claims (verifying and recording 10,000 reports), which nothing outside the plane
	// can observe ending; 5 s is several times what it takes.
	time.Sleep(5 * time.Second)
	cpu0, at0 := plane.cpu(), time.Now()
	time.Sleep(20 * time.Second) // the window the idle CPU figure is measured over
	cpuPct := 100 * (plane.cpu() - cpu0).Seconds() / time.Since(at0).Seconds()

	// Dispatch latency: queue a job for a random connected agent; time until it has it.
	var lat []time.Duration
	var trace []dispatchTrace
	for i := range dispatchJobs {
		n := (i * 7919) % len(fleet)
		t0 := time.Now()
		job, err := st.JobCreate(ctx, store.JobCreateParams{NodeID: fleet[n].id, Word: noop.Name, WordDigest: noop.Digest, Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "load"})
		if err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		got := testkit.Wait(b, received[n], fmt.Sprintf("the job for agent %d", n))
		lat = append(lat, got.Sub(t0))
		trace = append(trace, dispatchTrace{Job: job.ID, Node: fleet[n].id, Queued: t0.UnixMicro(), Committed: committed.UnixMicro(), Received: got.UnixMicro()})
		time.Sleep(10 * time.Millisecond) // pacing: dispatches 10 ms apart, not back to back
	}
	rss := plane.rssMiB() // with every agent still held
	if path := os.Getenv("LEXICON_LOAD_TRACE"); path != "" {
		// Each dispatch's timestamps, to be joined with the plane's log ("job handed out") when
		// looking for where a slow one spent its time.
		data, _ := json.Marshal(trace)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Error(err)
		}
	}
	cancel()
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(len(fleet)), "agents")
	b.ReportMetric(rss, "plane-RSS-MiB")
	b.ReportMetric(cpuPct, "plane-idle-CPU-%")
	b.ReportMetric(ms(lat[len(lat)/2]), "dispatch-p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "dispatch-p99-ms")
	fmt.Printf("fleet load: %d agents held on long poll: plane RSS %.0f MiB, idle CPU %.0f%% of one core; dispatch p50 %.1f ms p99 %.1f ms\n",
		len(fleet), rss, cpuPct, ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]))
}

// dispatchTrace is one timed dispatch, in Unix microseconds: before JobCreate, after it committed,
// and when the agent had the job.
type dispatchTrace struct {
	Job, Node                   string
	Queued, Committed, Received int64
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// simAgent is one simulated node: its key and id, and the digest of its report the plane last
// acknowledged, as a real agent keeps it.
type simAgent struct {
	id   string
	key  keys.NodePrivate
	held string // the plane's ClaimResponse.ReportDigest
}

// enrol creates nodes straight in the store, in parallel: joining 10,000 machines through the API
// would measure the join rate limit, not the plane.
func enrol(b *testing.B, st store.Store, n int) []*simAgent {
	ctx := context.Background()
	out := make([]*simAgent, n)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				k := keys.NewNode()
				j, err := st.JoinCreate(ctx, store.JoinCreateParams{
					Name: fmt.Sprintf("sim-%05d", i), Key: k.Public().String(), Fingerprint: k.Public().Fingerprint(),
					SourceAddress: "127.0.0.1", MaxPending: n + 1, MaxPendingPerSource: n + 1,
				})
				if err == nil {
					var res store.JoinApproveResult
					res, err = st.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: k.Public().Fingerprint(), By: "load"})
					out[i] = &simAgent{id: res.Node.ID, key: k}
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	return out
}

// send signs and posts a channel request and decodes the answer.
func (a *simAgent) send(ctx context.Context, c *http.Client, url, path string, in, out any) error {
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if err := httpsig.Sign(req, body, a.key, time.Now()); err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", path, resp.Status, data)
	}
	return json.Unmarshal(data, out)
}

var report = channel.ClaimRequest{Idle: true, Version: "load", Vocabulary: []channel.Word{noop}, Recipes: []channel.RecipeReport{}}

// claim is the agent's next claim: brief once the plane holds its report, as the real agent does.
func (a *simAgent) claim() channel.ClaimRequest {
	d := report.Digest()
	if a.held == d {
		return report.Brief()
	}
	full := report
	full.ReportDigest = d
	return full
}

func (a *simAgent) heard(resp *channel.ClaimResponse) {
	a.held = resp.ReportDigest
	if resp.SendReport {
		a.held = ""
	}
}

// finish reports a job done, asking for the next one in the same request; it returns the next claim's
// answer, or nil when the plane did not answer the claim (an older plane) or the request failed.
func (a *simAgent) finish(ctx context.Context, c *http.Client, url string, job *channel.Job) (*channel.ClaimResponse, error) {
	next := a.claim()
	var r channel.ResultResponse
	err := a.send(ctx, c, url, channel.PathResult, channel.ResultRequest{JobID: job.ID, Outcome: channel.OutcomeCompleted, Output: json.RawMessage(`{}`), Claim: &next}, &r)
	if err != nil || r.Claim == nil {
		return nil, err
	}
	a.heard(r.Claim)
	return r.Claim, nil
}

// poll long-polls until ctx ends, answering every job at once and timestamping its arrival.
func (a *simAgent) poll(ctx context.Context, c *http.Client, url string, connected *sync.WaitGroup, got chan<- time.Time) {
	var once sync.Once
	// The first claim's request written to the plane: the agent is connected.
	trace := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(w httptrace.WroteRequestInfo) {
		if w.Err == nil {
			once.Do(connected.Done)
		}
	}})
	for ctx.Err() == nil {
		var resp channel.ClaimResponse
		if err := a.send(trace, c, url, channel.PathClaim, a.claim(), &resp); err != nil {
			if ctx.Err() == nil {
				time.Sleep(time.Second) // a real agent's retry delay after a failed claim, simulated
			}
			continue
		}
		a.heard(&resp)
		for resp.Job != nil {
			select {
			case got <- time.Now():
			default:
			}
			next, err := a.finish(ctx, c, url, resp.Job)
			if err != nil || next == nil {
				break
			}
			resp = *next
		}
	}
}

// work claims and finishes jobs until ctx ends, calling done for each finished one.
func (a *simAgent) work(ctx context.Context, c *http.Client, url string, done func()) {
	for ctx.Err() == nil {
		var resp channel.ClaimResponse
		if err := a.send(ctx, c, url, channel.PathClaim, a.claim(), &resp); err != nil {
			return
		}
		a.heard(&resp)
		for resp.Job != nil {
			next, err := a.finish(ctx, c, url, resp.Job)
			if err != nil {
				return
			}
			done()
			if next == nil {
				break // an older plane: claim on its own
			}
			resp = *next
		}
	}
}

// plane is a lexicon-plane process under load.
type plane struct {
	cmd   *exec.Cmd
	url   string
	ca    string
	stats chan planeStats // the plane's answers to SIGUSR1
}

func startPlane(b *testing.B, dir, url string) *plane {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	if src := os.Getenv("LEXICON_PLANE_SRC"); src != "" {
		root = src
	}
	binary := filepath.Join(dir, "lexicon-plane")
	build := exec.Command("go", "build", "-o", binary, "./plane/cmd/lexicon-plane")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data", dir, "--claim-wait", "25s", "-o", "json"}
	if strings.Contains(url, "://") {
		args = append(args, "--db", url)
	}
	cmd := exec.Command(binary, args...)
	out, _ := cmd.StdoutPipe()
	logs, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p := &plane{cmd: cmd, stats: make(chan planeStats, 1)}
	go p.readLogs(logs)
	rd := bufio.NewReader(out)
	line, err := rd.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	var ready struct{ URL, CA string }
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		rest, _ := io.ReadAll(rd)
		b.Fatalf("the plane did not start: %s%s", line, rest)
	}
	p.url, p.ca = ready.URL, ready.CA
	return p
}

// planeStats is the plane's count of store statements, logged when it gets SIGUSR1.
type planeStats struct {
	ok                       bool
	statements, transactions int64
}

// readLogs drains the plane's log, keeping the statement counts it logs on SIGUSR1.
func (p *plane) readLogs(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var keep io.Writer = io.Discard
	if path := os.Getenv("LEXICON_LOAD_PLANE_LOG"); path != "" {
		// The plane's own log, kept for joining with LEXICON_LOAD_TRACE.
		if f, err := os.Create(path); err == nil {
			defer f.Close()
			keep = f // unbuffered: the plane is killed, and this goroutine with it, at the end
		}
	}
	for sc.Scan() {
		_, _ = keep.Write(append(sc.Bytes(), '\n'))
		if !bytes.Contains(sc.Bytes(), []byte(`"store statements"`)) {
			continue
		}
		var line struct {
			Statements   int64 `json:"statements"`
			Transactions int64 `json:"transactions"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil {
			p.stats <- planeStats{true, line.Statements, line.Transactions}
		}
	}
}

// statements asks the plane for its statement counts; an older plane does not answer.
func (p *plane) statements() planeStats {
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return planeStats{}
	}
	select {
	case s := <-p.stats:
		return s
	case <-time.After(2 * time.Second): // an older plane ignores the signal: no answer comes
		return planeStats{}
	}
}

func (p *plane) client(conns int) *http.Client {
	pem, _ := os.ReadFile(p.ca)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		MaxIdleConns:        conns + 100,
		MaxIdleConnsPerHost: conns + 100,
		IdleConnTimeout:     5 * time.Minute,
	}
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// cpu is the plane's user+system CPU time so far, from /proc.
func (p *plane) cpu() time.Duration { return procCPU(p.cmd.Process.Pid) }

func (p *plane) rssMiB() float64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// procCPU is a process's user+system CPU time so far, from /proc; zero if it is gone.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// usage is one sample of everything the round-trip figures are differences of, but PostgreSQL's CPU
// (pgWatch).
type usage struct {
	plane, self time.Duration
	commits     int64
	stats       planeStats
}

func sample(p *plane, pg *pgServer) usage {
	u := usage{plane: p.cpu(), stats: p.statements()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if pg != nil {
		u.commits = pg.commits()
	}
	return u
}

// pgServer is the PostgreSQL server under the plane.
type pgServer struct {
	admin   string // DSN of the server's test database
	url     string // DSN of the plane's schema in loadDatabase
	cfg     *pgx.ConnConfig
	benchDB string // this run's database for pgbench
}

func postgres(b *testing.B) *pgServer {
	dsn := os.Getenv("LEXICON_TEST_POSTGRES")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Skipf("PostgreSQL not reachable: %v", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, loadDatabase).Scan(&exists); err != nil {
		b.Fatal(err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+loadDatabase); err != nil && !strings.Contains(err.Error(), "already exists") {
			b.Fatal(err)
		}
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	// atEnd runs sql on the database cfg names when the benchmark ends, on a connection of its own.
	atEnd := func(cfg *pgx.ConnConfig, sql string) {
		b.Cleanup(func() {
			if c, err := pgx.ConnectConfig(ctx, cfg); err == nil {
				_, _ = c.Exec(ctx, sql)
				c.Close(ctx)
			}
		})
	}
	bench := fmt.Sprintf("%s_%d", pgbenchDatabase, time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+bench); err != nil {
		b.Fatal(err)
	}
	atEnd(cfg, "DROP DATABASE IF EXISTS "+bench+" WITH (FORCE)")
	loadCfg := cfg.Copy()
	loadCfg.Database = loadDatabase
	lc, err := pgx.ConnectConfig(ctx, loadCfg)
	if err != nil {
		b.Fatal(err)
	}
	defer lc.Close(ctx)
	schema := fmt.Sprintf("load_%d", time.Now().UnixNano())
	if _, err := lc.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	atEnd(loadCfg, "DROP SCHEMA "+schema+" CASCADE")
	url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable&search_path=%s", cfg.User, cfg.Host, cfg.Port, loadDatabase, schema)
	return &pgServer{admin: dsn, url: url, cfg: cfg, benchDB: bench}
}

// commits is the count of transactions the plane's database has ended.
func (pg *pgServer) commits() int64 {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.admin)
	if err != nil {
		return 0
	}
	defer conn.Close(ctx)
	// Backends flush their statistics at most once a second; wait that out so the count is whole.
	time.Sleep(1100 * time.Millisecond)
	var n int64
	_ = conn.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, loadDatabase).Scan(&n)
	return n
}

// pgWatchEvery is how often a pgWatch polls: a backend that exits keeps its CPU time up to its last
// poll, so at most this much of each is lost.
const pgWatchEvery = 200 * time.Millisecond

// pgWatch follows the CPU time of PostgreSQL's processes through the round-trip window by polling
// them. Two samples, one before and one after, lost the time of every backend that exited in between
// (the plane's pool drops a connection whose query was cancelled or whose pipeline failed, and opens
// another): the figure came out 0% in a run whose backends had all been replaced. A process seen
// first after the start is new, and counts from zero.
type pgWatch struct {
	pg          *pgServer
	conn        *pgx.Conn
	first, last map[int]time.Duration // every postgres process of this machine
	plane       map[int]bool          // those seen serving the plane (application_name)
	quit, done  chan struct{}
}

func (pg *pgServer) watch(b *testing.B) *pgWatch {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.admin)
	if err != nil {
		b.Fatal(err)
	}
	w := &pgWatch{pg: pg, conn: conn, first: map[int]time.Duration{}, last: map[int]time.Duration{}, plane: map[int]bool{},
		quit: make(chan struct{}), done: make(chan struct{})}
	w.poll(true)
	go func() {
		defer close(w.done)
		t := time.NewTicker(pgWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				w.poll(false)
			case <-w.quit:
				return
			}
		}
	}()
	return w
}

func (w *pgWatch) poll(start bool) {
	ctx := context.Background()
	rows, err := w.conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = $2`, loadDatabase, planeAppName)
	if err == nil {
		for rows.Next() {
			var pid int
			if rows.Scan(&pid) == nil {
				w.plane[pid] = true
			}
		}
		rows.Close()
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		if pid == int(w.conn.PgConn().PID()) {
			continue // the watch's own backend
		}
		t := procCPU(pid)
		if _, seen := w.first[pid]; !seen {
			w.first[pid] = 0
			if start {
				w.first[pid] = t
			}
		}
		if t > 0 { // zero: it exited since it was listed
			w.last[pid] = t
		}
	}
}

// stop polls a last time and returns the CPU time the plane's backends and all postgres processes
// spent since the watch began.
func (w *pgWatch) stop() (plane, all time.Duration) {
	close(w.quit)
	<-w.done
	w.poll(false)
	_ = w.conn.Close(context.Background())
	for pid, t := range w.last {
		d := t - w.first[pid]
		all += d
		if w.plane[pid] {
			plane += d
		}
	}
	return plane, all
}

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbench runs pgbench -N (simple-update transactions) against its own database on the same server
// and returns its transactions per second.
func (pg *pgServer) pgbench(b *testing.B) float64 {
	conn := []string{"-h", pg.cfg.Host, "-p", strconv.Itoa(int(pg.cfg.Port)), "-U", pg.cfg.User}
	run := func(args ...string) string {
		cmd := exec.Command("pgbench", append(append(args, conn...), pg.benchDB)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("pgbench %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("-i", "-q", "-s", "1")
	out := run("-N", "-M", "prepared", "-c", strconv.Itoa(pgbenchClients), "-j", "2", "-T", strconv.Itoa(pgbenchSeconds))
	m := tpsRE.FindStringSubmatch(out)
	if m == nil {
		b.Fatalf("pgbench printed no tps:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(m[1], 64)
	return tps
}
