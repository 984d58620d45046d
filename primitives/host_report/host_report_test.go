package main_test

import (
	"os"
	"slices"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/host_report.wasm"

type report struct {
	Hostname string
	Kernel   string
	BootID   string `json:"boot_id"`
	CPUs     int
	Load     []float64
	Memory   struct {
		TotalBytes uint64 `json:"total_bytes"`
	}
	Disks []struct {
		Mount      string
		TotalBytes uint64 `json:"total_bytes"`
	}
	FailedUnits []string `json:"failed_units"`
	Unknown     []string
}

func TestReportsThisMachine(t *testing.T) {
	fake := wordtest.NewFakeSystemd(map[string]string{
		"nginx.service":  "ActiveState=failed\nSubState=failed\nResult=exit-code\nLoadState=loaded\n",
		"backup.service": "ActiveState=failed\nSubState=failed\nResult=timeout\nLoadState=loaded\n",
		"sshd.service":   "ActiveState=active\nSubState=running\nLoadState=loaded\n",
	})
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake))
	var r report
	res := w.Must(nil, &r)
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if r.Hostname != host || r.BootID+"\n" != string(boot) || r.Kernel == "" || r.CPUs < 1 || len(r.Load) != 3 || r.Memory.TotalBytes == 0 {
		t.Fatalf("report %+v", r)
	}
	if len(r.Disks) == 0 || r.Disks[0].TotalBytes == 0 {
		t.Fatalf("disks %+v", r.Disks)
	}
	if !slices.Equal(r.FailedUnits, []string{"backup.service", "nginx.service"}) || len(r.Unknown) != 0 {
		t.Fatalf("failed %v unknown %v", r.FailedUnits, r.Unknown)
	}
	for _, c := range res.Capabilities {
		if !c.Allowed {
			t.Fatalf("a call was refused: %+v", c)
		}
	}
}

func TestSaysUnknownWithoutSystemd(t *testing.T) {
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithoutSystemd())
	var r report
	w.Must(nil, &r)
	if r.FailedUnits != nil || !slices.Contains(r.Unknown, "failed_units") {
		t.Fatalf("failed %v unknown %v", r.FailedUnits, r.Unknown)
	}
}
