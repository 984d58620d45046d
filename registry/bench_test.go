package registry_test

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
)

// BenchmarkVerifyStatement200 measures offline verification of a 200-module statement: parse, key
// chain, signature, sequence and expiry, plus the inclusion proof and checkpoint when logged. Artifact
// hashing is left out: it depends on module sizes, not on the statement.
func BenchmarkVerifyStatement200(b *testing.B) {
	for _, logged := range []bool{false, true} {
		name := "unlogged"
		if logged {
			name = "logged"
		}
		b.Run(name, func(b *testing.B) {
			f := &fixture{key: newKey(), modules: writeModules(b, 199, nil), log: tlogtest.New("log.lexicon.test")}
			srv := f.log.Server()
			defer srv.Close()
			f.logURL = srv.URL
			dir := f.build(b, 1, nil)
			if logged {
				f.addLog(b, dir)
			}
			data, err := os.ReadFile(filepath.Join(dir, registry.BundleFile))
			if err != nil {
				b.Fatal(err)
			}
			tr, err := registry.OpenTrust(f.newTrust(b, logged))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(data))/1024, "bundle-KiB")
			var took []time.Duration
			cpu0 := cpuTime()
			for b.Loop() {
				t0 := time.Now()
				if _, err := tr.Verify(data, now); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			// The median, which the goal names, and CPU per verification beside it: on a shared machine
			// wall time is mostly waiting.
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
