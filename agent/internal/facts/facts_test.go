package facts_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/facts"
	"github.com/lexicon-fleet/lexicon/registry/channel"
)

func write(t *testing.T, root, rel, text string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFactsFromFiles reads a machine's facts from its files and kernel answers, caps each field, and
// keeps the reading for Every: a second call within it answers the same, one after it reads again.
func TestFactsFromFiles(t *testing.T) {
	root := t.TempDir()
	write(t, root, "etc/os-release", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n")
	write(t, root, "proc/meminfo", "MemTotal:        8000000 kB\nMemFree:  1 kB\nMemAvailable:    4000000 kB\n")
	write(t, root, "proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU @ 3GHz\n\nprocessor\t: 1\nmodel name\t: Test CPU @ 3GHz\n")
	write(t, root, "proc/uptime", "3600.50 100.00\n")
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	addrs := make([]string, channel.MaxFactAddresses+5)
	for i := range addrs {
		addrs[i] = "192.0.2.1"
	}
	reads := 0
	r := &facts.Reader{Root: root, Now: func() time.Time { return now }, Host: func() facts.Host {
		reads++
		return facts.Host{Kernel: "6.1.0-test", Arch: "x86_64", Hostname: strings.Repeat("h", 300), DiskBytes: 100 << 30, DiskFree: 10<<30 + 12345, Addresses: addrs}
	}}
	f := r.Facts()
	if f.OS != "debian-12" || f.OSName != "Debian GNU/Linux 12 (bookworm)" || f.Kernel != "6.1.0-test" || f.Arch != "x86_64" {
		t.Errorf("os and kernel: %+v", f)
	}
	if f.CPUs != 2 || f.CPUModel != "Test CPU @ 3GHz" {
		t.Errorf("cpus: %d %q", f.CPUs, f.CPUModel)
	}
	if f.MemoryBytes != 8000000<<10 || f.MemoryFreeBytes != (4000000<<10)/channel.FactsMemoryStep*channel.FactsMemoryStep {
		t.Errorf("memory: %d %d", f.MemoryBytes, f.MemoryFreeBytes)
	}
	if f.DiskBytes != 100<<30 || f.DiskFreeBytes != 10<<30 {
		t.Errorf("disk: %d %d", f.DiskBytes, f.DiskFreeBytes)
	}
	if want := now.Add(-time.Hour); !f.BootedAt.Equal(want) {
		t.Errorf("booted at %v, want %v", f.BootedAt, want)
	}
	if len(f.Hostname) != channel.MaxFactText || len(f.Addresses) != channel.MaxFactAddresses {
		t.Errorf("caps: hostname %d bytes, %d addresses", len(f.Hostname), len(f.Addresses))
	}
	if v, ok := f.Fact("os"); !ok || v != "debian-12" || !f.Has("address", "192.0.2.1") || !f.Has("cpus", "2") {
		t.Errorf("fact lookup: %q %v", v, ok)
	}
	now = now.Add(channel.FactsEvery - time.Second)
	if r.Facts(); reads != 1 {
		t.Errorf("read %d times within the refresh period", reads)
	}
	now = now.Add(time.Second)
	if r.Facts(); reads != 2 {
		t.Errorf("read %d times after the refresh period", reads)
	}
}

// TestFactsThisMachine reads the machine the test runs on: whatever it is, it has a kernel and CPUs.
func TestFactsThisMachine(t *testing.T) {
	f := (&facts.Reader{}).Facts()
	if f.CPUs < 1 || f.Arch == "" || f.CollectedAt.IsZero() {
		t.Fatalf("facts of this machine: %+v", f)
	}
}
