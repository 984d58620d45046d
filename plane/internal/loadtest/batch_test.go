package loadtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
)

// batchAgents is the fleet one batch reaches in BenchmarkBatch1000; batchRuns how many batches it times.
const (
	batchAgents = 1000
	batchRuns   = 3
	batchGoal   = 5 * time.Second
)

// BenchmarkBatch1000 times a batch of one word across 1,000 simulated agents held on long poll by a
// real plane on PostgreSQL: from the batch's submit (one transaction creating its 1,000 jobs) until
// the store holds the last result. The agents answer each job at once, as the fleet load test's do,
// so the figure is the plane's: wake-ups, hand-outs, results and the batch's own bookkeeping. Three
// batches run on the same held fleet; the median and range are printed.
func BenchmarkBatch1000(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	pg := postgres(b)
	plane := startPlane(b, dir, pg.url+"&application_name="+planeAppName)
	st, err := open.URL(ctx, pg.url)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	fleet := enrol(b, st, batchAgents)
	client := plane.client(batchAgents)

	lg, cancel := context.WithCancel(ctx)
	defer cancel()
	var connected sync.WaitGroup
	connected.Add(len(fleet))
	var wg sync.WaitGroup
	for i, a := range fleet {
		got := make(chan time.Time, 1)
		wg.Go(func() { a.poll(lg, client, plane.url, &connected, got) })
		if i%200 == 199 {
			time.Sleep(50 * time.Millisecond) // pacing of the load generator: ramp the TLS handshakes
		}
	}
	connected.Wait()
	// Every agent's first claim reported its vocabulary before the batch picks them: wait until the
	// store holds all the reports, as a batch is made only for nodes that report the word.
	for {
		res, err := st.NodeList(ctx, store.NodeListParams{State: store.NodeActive, Limit: store.MaxListLimit, Filter: store.NodeFilter{Word: noop.Name}})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Nodes) == batchAgents {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	var runs []time.Duration
	for range batchRuns {
		p := store.BatchCreateParams{Word: noop.Name, Selector: "all", Class: "look", Params: json.RawMessage(`{}`),
			ErrorBudget: store.NoErrorBudget, CreatedBy: "load"}
		for _, a := range fleet {
			p.Targets = append(p.Targets, store.BatchTarget{NodeID: a.id, WordDigest: noop.Digest})
		}
		start := time.Now()
		batch, err := st.BatchCreate(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		for {
			got, err := st.BatchGet(ctx, store.BatchGetParams{ID: batch.ID})
			if err != nil {
				b.Fatal(err)
			}
			if got.Counts.Open() == 0 {
				if got.Counts.Completed != batchAgents {
					b.Fatalf("batch ended %+v", got.Counts)
				}
				break
			}
			if time.Since(start) > time.Minute {
				b.Fatalf("batch not done after a minute: %+v", got.Counts)
			}
			time.Sleep(10 * time.Millisecond) // the figure's resolution
		}
		runs = append(runs, time.Since(start))
	}
	cancel()
	wg.Wait()
	slices.Sort(runs)
	median := runs[len(runs)/2]
	b.ReportMetric(median.Seconds(), "submit-to-last-result-s")
	verdict := "met"
	if median > batchGoal {
		verdict = "NOT MET"
	}
	fmt.Printf("batch across %d simulated agents (postgres): submit to last result median %.2f s (range %.2f-%.2f s, %d runs), goal <= %.0f s: %s\n",
		batchAgents, median.Seconds(), runs[0].Seconds(), runs[len(runs)-1].Seconds(), len(runs), batchGoal.Seconds(), verdict)
}
