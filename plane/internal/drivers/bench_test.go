package drivers_test

import (
	"sort"
	"testing"
	"time"
)

// BenchmarkCallThroughThePlane measures one DNS call as the plane makes it, on SQLite: the account and
// driver state read from the store, the call to the account's running driver process, and the audit
// record written. It reports the median (p50-ms) next to the mean.
func BenchmarkCallThroughThePlane(b *testing.B) {
	f := newFixture(b, "")
	f.publish("dns-memory")
	if _, err := f.m.Enable(f.ctx, "bench", "dns-memory", false); err != nil {
		b.Fatal(err)
	}
	if _, err := f.m.AccountAdd(f.ctx, "bench", memoryAccount("lab", "example.com")); err != nil {
		b.Fatal(err)
	}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := f.m.DNSZones(f.ctx, "bench", "lab"); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
}
