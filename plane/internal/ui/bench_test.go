package ui_test

import (
	"io"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

// BenchmarkRender measures the server's time to answer a page (the in-process API calls, the
// template, TLS on loopback) with a fleet of 10,000 nodes from the store's fixtures, and reports the
// p50 and p99 of the requests and the page's weight.
func BenchmarkRender(b *testing.B) {
	p := newPlane(b)
	storetest.Fleet(b, p.store, "node", 10000, time.Now())
	admin, _ := p.token(store.RoleAdmin)
	br := p.browser()
	br.signIn(admin)
	for _, path := range []string{"/ui/", "/ui/nodes", "/ui/nodes?state=active", "/ui/nodes?version=0.2.0&word=w"} {
		b.Run(path, func(b *testing.B) {
			var times []time.Duration
			var weight int
			for b.Loop() {
				t0 := time.Now()
				res, err := br.c.Get(p.ts.URL + path)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				times = append(times, time.Since(t0))
				if res.StatusCode != http.StatusOK {
					b.Fatalf("%s: %d", path, res.StatusCode)
				}
				weight = len(body)
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(weight), "bytes")
		})
	}
}
