package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
)

// BenchmarkAgentUpdate publishes a release pinning a new agent to a fleet of one real agent (under the
// supervisor) and 99 simulated ones (in-process channel clients that fetch the pinned binary, check
// it against the statement and report current), and reports:
//
//	gap-ms      the real agent's gap in service: its last claim as the old binary to its first as the new
//	all-current-ms  publish to all 100 nodes reporting current, as the plane stores it
func BenchmarkAgentUpdate(b *testing.B) {
	const sims = 99
	v1, v2 := buildAgent(b, "1.0.0", "", "amd64"), buildAgent(b, "2.0.0", "", "amd64")
	for range b.N {
		f := newFleet(b, "sqlite", fleetOptions{claimWait: "2s"})
		a, s := f.enrolSupervised("bench-real", acceptLookAndChange, v1)
		st, err := open.URL(context.Background(), f.store)
		must(b, err)
		nodes := make([]*simNode, sims)
		for i := range nodes {
			k := keys.NewNode()
			j, err := st.JoinCreate(context.Background(), store.JoinCreateParams{Name: fmt.Sprintf("bench-sim-%03d", i), Key: k.Public().String(),
				Fingerprint: k.Public().Fingerprint(), SourceAddress: "127.0.0.1", MaxPending: sims + 10, MaxPendingPerSource: sims + 10})
			must(b, err)
			res, err := st.JoinApprove(context.Background(), store.JoinApproveParams{ID: j.Join.ID, Fingerprint: k.Public().Fingerprint(), By: "bench"})
			must(b, err)
			nodes[i] = &simNode{id: res.Node.ID, key: k, version: "1.0.0"}
		}
		ctx, cancel := context.WithCancel(context.Background())
		client := benchClient(b, f.ca)
		var wg sync.WaitGroup
		for _, n := range nodes {
			wg.Go(func() { n.run(ctx, client, f.url) })
		}
		publish := time.Now()
		f.publishAgentRelease("2.0.0", 2, v2)
		f.planeLog.WaitFor(b, updateState(a.nodeID, "2.0.0", "trial"))
		for _, n := range nodes {
			f.planeLog.WaitFor(b, updateState(n.id, "2.0.0", "current"))
		}
		f.planeLog.WaitFor(b, updateState(a.nodeID, "2.0.0", "current"))
		all := time.Since(publish)
		cancel()
		wg.Wait()
		s.stop()
		st.Close()

		// The old binary logs "fetching" right after its last claim returned; the plane logs the new
		// binary's first claim (its version changed).
		last := logTime(b, s.log.String(), `"msg":"agent update: fetching"`)
		first := logTime(b, f.planeLog.String(), `"msg":"node update state","node":"`+a.nodeID+`","version":"2.0.0"`)
		b.ReportMetric(float64(first.Sub(last).Milliseconds()), "gap-ms")
		b.ReportMetric(float64(all.Milliseconds()), "all-current-ms")
	}
}

var timeField = regexp.MustCompile(`"time":"([^"]+)"`)

// logTime is the time of the first slog JSON line holding s.
func logTime(b testing.TB, log, s string) time.Time {
	for _, line := range bytes.Split([]byte(log), []byte("\n")) {
		if bytes.Contains(line, []byte(s)) {
			if m := timeField.FindSubmatch(line); m != nil {
				t, err := time.Parse(time.RFC3339Nano, string(m[1]))
				must(b, err)
				return t
			}
		}
	}
	b.Fatalf("no log line holds %s", s)
	return time.Time{}
}

// simDownloads caps the simulated agents' binary downloads at 10 at once: each is a whole agent
// (about 35 MB) the plane reads from its store into memory, and 99 at once would measure this shared
// test machine's memory rather than the plane. Real agents fetch within one claim cycle of each other.
var simDownloads = make(chan struct{}, 10)

// simNode is a simulated agent: it claims, and when the statement changes fetches it, fetches the
// agent it pins through the artifact route, checks the sha256 against the pin, and reports current
// with the new version – the plane's side of a fleet update, without 99 processes.
type simNode struct {
	id      string
	key     keys.NodePrivate
	version string
	digest  string
}

func (n *simNode) run(ctx context.Context, c *http.Client, url string) {
	state := channel.UpdateNone
	for ctx.Err() == nil {
		var resp channel.ClaimResponse
		req := channel.ClaimRequest{Idle: true, Version: n.version, Vocabulary: []channel.Word{}, Recipes: []channel.RecipeReport{},
			Statement: channel.StatementRef{Digest: n.digest}, Update: &channel.UpdateReport{State: state}}
		body, _ := json.Marshal(req)
		if err := n.do(ctx, c, http.MethodPost, url+channel.PathClaim, body, &resp); err != nil {
			if ctx.Err() == nil {
				time.Sleep(time.Second) // a real agent's retry delay, simulated
			}
			continue
		}
		if resp.Statement.Digest == "" || resp.Statement.Digest == n.digest {
			continue
		}
		var bundle []byte
		if err := n.do(ctx, c, http.MethodGet, url+channel.PathArtifact+"?statement=current", nil, &bundle); err != nil {
			continue
		}
		st, err := statement.DecodeBundle(bundle)
		if err != nil {
			continue
		}
		pin := ""
		for _, p := range registry.AgentPins(st) {
			if p.Platform == "linux-amd64" {
				pin = p.SHA256
			}
		}
		if pin != "" {
			var bin []byte
			simDownloads <- struct{}{}
			err := n.do(ctx, c, http.MethodGet, url+channel.PathArtifact+"?agent=linux-amd64", nil, &bin)
			<-simDownloads
			if err != nil || cas.Sum(bin) != pin {
				state = channel.UpdateFetchFailed
				continue
			}
			n.version, state = st.Predicate.Release, channel.UpdateCurrent
		}
		n.digest = resp.Statement.Digest
	}
}

// do sends a signed request; out is *[]byte for raw answers, else decoded JSON.
func (n *simNode) do(ctx context.Context, c *http.Client, method, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if err := httpsig.Sign(req, body, n.key, time.Now()); err != nil {
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
		return fmt.Errorf("%s: %s", resp.Status, data)
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data
		return nil
	}
	return json.Unmarshal(data, out)
}

func benchClient(b *testing.B, caFile string) *http.Client {
	pem, err := os.ReadFile(caFile)
	must(b, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 128}, Timeout: 2 * time.Minute}
}
