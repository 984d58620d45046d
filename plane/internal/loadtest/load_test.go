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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	dispatchJobs    = 400
)

var noop = channel.Word{Name: "noop", Version: "1.0.0", Digest: strings.Repeat("a", 64), Class: "look"}

// BenchmarkFleet runs the whole scenario once and reports its figures as metrics.
func BenchmarkFleet(b *testing.B) {
	agents := 10000
	if n, err := strconv.Atoi(os.Getenv("LEXICON_LOAD_AGENTS")); err == nil && n > 0 {
		agents = n
	}
	ctx := context.Background()
	url := postgres(b)
	st, err := open.URL(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	fleet := enrol(b, st, agents)
	plane := startPlane(b, url)
	client := plane.client(agents)

	// Connect every agent on long poll.
	lg, cancel := context.WithCancel(ctx)
	defer cancel()
	received := make([]chan time.Time, agents)
	var connected sync.WaitGroup // done once every agent's first claim is written to the plane
	connected.Add(agents)
	var wg sync.WaitGroup
	for i := range fleet {
		received[i] = make(chan time.Time, 64)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fleet[i].poll(lg, client, plane.url, &connected, received[i], false)
		}()
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
	rss := plane.rssMiB()

	// Dispatch latency: queue a job for a random connected agent; time until it has it.
	var lat []time.Duration
	for i := range dispatchJobs {
		n := (i * 7919) % agents
		t0 := time.Now()
		if _, err := st.JobCreate(ctx, store.JobCreateParams{NodeID: fleet[n].id, Word: noop.Name, WordDigest: noop.Digest, Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "load"}); err != nil {
			b.Fatal(err)
		}
		got := testkit.Wait(b, received[n], fmt.Sprintf("the job for agent %d", n))
		lat = append(lat, got.Sub(t0))
		time.Sleep(10 * time.Millisecond) // pacing: dispatches 10 ms apart, not back to back
	}
	cancel()
	wg.Wait()
	slices.Sort(lat)

	// Sustained round trips: a subset of agents works through queued jobs as fast as it can.
	rt := fleet[:min(roundTripAgents, agents)]
	for _, a := range rt {
		for range roundTripJobs {
			if _, err := st.JobCreate(ctx, store.JobCreateParams{NodeID: a.id, Word: noop.Name, WordDigest: noop.Digest, Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "load"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	var done atomic.Int64
	work, stop := context.WithCancel(ctx)
	start := time.Now()
	var wg2 sync.WaitGroup
	for _, a := range rt {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			for a.roundTrip(work, client, plane.url) {
				if done.Add(1) == int64(len(rt)*roundTripJobs) {
					stop()
				}
			}
		}()
	}
	wg2.Wait()
	stop()
	perSec := float64(done.Load()) / time.Since(start).Seconds()

	b.ReportMetric(float64(agents), "agents")
	b.ReportMetric(rss, "plane-RSS-MiB")
	b.ReportMetric(cpuPct, "plane-CPU-%")
	b.ReportMetric(ms(lat[len(lat)/2]), "dispatch-p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "dispatch-p99-ms")
	b.ReportMetric(perSec, "roundtrips/s")
	fmt.Printf("fleet load: %d agents connected: plane RSS %.0f MiB, CPU %.0f%% of one core; dispatch p50 %.1f ms p99 %.1f ms; %.0f job round trips/s (%d agents)\n",
		agents, rss, cpuPct, ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), perSec, len(rt))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// simAgent is one simulated node: its key and id.
type simAgent struct {
	id  string
	key keys.NodePrivate
}

// enrol creates nodes straight in the store, in parallel: joining 10,000 machines through the API
// would measure the join rate limit, not the plane.
func enrol(b *testing.B, st store.Store, n int) []*simAgent {
	ctx := context.Background()
	out := make([]*simAgent, n)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
		}()
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

func (a *simAgent) claim() channel.ClaimRequest {
	return channel.ClaimRequest{Idle: true, Version: "load", Vocabulary: []channel.Word{noop}, Recipes: []channel.RecipeReport{}}
}

// poll long-polls until ctx ends, answering every job at once and timestamping its arrival.
func (a *simAgent) poll(ctx context.Context, c *http.Client, url string, connected *sync.WaitGroup, got chan<- time.Time, _ bool) {
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
		if resp.Job != nil {
			select {
			case got <- time.Now():
			default:
			}
			var r channel.ResultResponse
			_ = a.send(ctx, c, url, channel.PathResult, channel.ResultRequest{JobID: resp.Job.ID, Outcome: "completed", Output: json.RawMessage(`{}`)}, &r)
		}
	}
}

// roundTrip claims one job and reports it; false when there is none left or ctx ended.
func (a *simAgent) roundTrip(ctx context.Context, c *http.Client, url string) bool {
	var resp channel.ClaimResponse
	if err := a.send(ctx, c, url, channel.PathClaim, a.claim(), &resp); err != nil || resp.Job == nil {
		return false
	}
	var r channel.ResultResponse
	return a.send(ctx, c, url, channel.PathResult, channel.ResultRequest{JobID: resp.Job.ID, Outcome: "completed", Output: json.RawMessage(`{}`)}, &r) == nil
}

// plane is a lexicon-plane process under load.
type plane struct {
	cmd *exec.Cmd
	url string
	ca  string
}

func startPlane(b *testing.B, url string) *plane {
	dir := b.TempDir()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	binary := filepath.Join(dir, "lexicon-plane")
	build := exec.Command("go", "build", "-o", binary, "./plane/cmd/lexicon-plane")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(binary, "serve", "--listen", "127.0.0.1:0", "--data", dir, "--db", url, "--claim-wait", "25s", "-o", "json")
	cmd.Stderr = io.Discard
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	var ready struct{ URL, CA string }
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		b.Fatal(err)
	}
	return &plane{cmd: cmd, url: ready.URL, ca: ready.CA}
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
func (p *plane) cpu() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

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

func postgres(b *testing.B) string {
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
	schema := fmt.Sprintf("load_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c, err := pgx.Connect(ctx, dsn)
		if err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c.Close(ctx)
		}
	})
	return dsn + "&search_path=" + schema
}
