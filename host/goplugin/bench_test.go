package goplugin_test

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
)

// Driver start to first call: verify from the store, seal into a memfd, checksum, exec, handshake with
// AutoMTLS, dispense, Info (the host's own check), then one call. Stopping is not timed. Goal: 150 ms.
func BenchmarkStartToFirstCall(b *testing.B) {
	store, digest := storeWith(b, "dns")
	spec := dnsSpec
	spec.Digest = digest
	ctx := context.Background()
	var times []time.Duration
	cpu0 := cpuTime()
	for b.Loop() {
		t0 := time.Now()
		d, err := goplugin.Start(ctx, store, spec, goplugin.Options{Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		n, _ := d.DNS()
		if _, err := n.Info(ctx); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
		b.StopTimer()
		d.Stop()
		b.StartTimer()
	}
	reportP50(b, times)
	// CPU time of host and driver together per start (stop included): what a start costs whatever else
	// the machine is doing, unlike wall time on a shared machine.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(times)), "cpu-ms/op")
}

// cpuTime is the user and system time of this process and its reaped children.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
}

// Per-call overhead of a no-op call (Info) through the host: timeout, gRPC over AutoMTLS, the
// driver's adapter and back. Goal: p50 of 1 ms.
func BenchmarkNoopCall(b *testing.B) {
	store, digest := storeWith(b, "dns")
	spec := dnsSpec
	spec.Digest = digest
	ctx := context.Background()
	d, err := goplugin.Start(ctx, store, spec, goplugin.Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Stop()
	n, _ := d.DNS()
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := n.Info(ctx); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	reportP50(b, times)
}

func reportP50(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
}
