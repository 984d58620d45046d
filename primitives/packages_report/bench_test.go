package main_test

import (
	"slices"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

func TestMain(m *testing.M) { wordtest.Main(m) }

// BenchmarkPackagesReport is packages_report on the Debian 12 root with the fixture installed, a
// security fix waiting and the daemon on replaced code, in worker processes as a node runs words
// (the module already compiled): its apt-cache runs, dpkg's database and the /proc scan. It prints
// the median and the range of the runs.
func BenchmarkPackagesReport(b *testing.B) {
	r := apttest.NewRoot(b)
	r.StartDaemon(b)
	r.Run(b, "/usr/bin/apt-get", "install", "-y", "-q", apttest.Lib+"=1.1")
	w := wordtest.Load(b, wasmFile, "manifest.json", wordtest.WithPackages(&pkgmgr.Apt{Root: r.Dir}), wordtest.WithIsolation(wasm.Process))
	var rep report
	w.Must(nil, &rep) // compiles the module, and checks what is measured is a full report
	if len(rep.StaleProcesses) != 1 || len(rep.SecurityUpgrades) == 0 {
		b.Fatalf("%+v", rep)
	}
	var runs []time.Duration
	for b.Loop() {
		t0 := time.Now()
		w.Must(nil, nil)
		runs = append(runs, time.Since(t0))
	}
	slices.Sort(runs)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(runs[len(runs)/2]), "median-ms")
	b.ReportMetric(ms(runs[0]), "min-ms")
	b.ReportMetric(ms(runs[len(runs)-1]), "max-ms")
	b.ReportMetric(0, "ns/op")
}
