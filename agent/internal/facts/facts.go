// Package facts reads the host facts a node reports with its claims (registry/channel.HostFacts) from
// the machine itself, and keeps them for channel.FactsEvery so that a claim's report stays the same
// between refreshes.
package facts

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// Reader reads the facts and keeps the last reading.
type Reader struct {
	// Root is the folder /etc and /proc are read under: "" is /, a test's folder otherwise.
	Root string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Every is how long a reading is kept; 0 is channel.FactsEvery.
	Every time.Duration
	// Host answers what the kernel says (uname, statfs of /) and the addresses; nil reads this
	// machine's.
	Host func() Host

	mu   sync.Mutex
	last *channel.HostFacts
}

// Host is what the kernel answers directly rather than through a file.
type Host struct {
	Kernel, Arch, Hostname string
	DiskBytes, DiskFree    int64
	Addresses              []string
}

// Facts answers the kept reading, reading again once it is older than Every. The answer is a copy.
func (r *Reader) Facts() *channel.HostFacts {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	every := r.Every
	if every == 0 {
		every = channel.FactsEvery
	}
	if r.last == nil || now().Sub(r.last.CollectedAt) >= every {
		f := r.read(now())
		r.last = &f
	}
	out := *r.last
	out.Addresses = append([]string(nil), r.last.Addresses...)
	return &out
}

func (r *Reader) read(now time.Time) channel.HostFacts {
	f := channel.HostFacts{CollectedAt: now.UTC().Truncate(time.Second)}
	osr := r.keyValues("etc/os-release", "=")
	if len(osr) == 0 {
		osr = r.keyValues("usr/lib/os-release", "=")
	}
	f.OS = osr["ID"]
	if v := osr["VERSION_ID"]; v != "" {
		f.OS += "-" + v
	}
	f.OSName = osr["PRETTY_NAME"]
	mem := r.keyValues("proc/meminfo", ":")
	f.MemoryBytes = kib(mem["MemTotal"])
	f.MemoryFreeBytes = down(kib(mem["MemAvailable"]), channel.FactsMemoryStep)
	f.CPUs, f.CPUModel = r.cpus()
	if f.CPUs == 0 {
		f.CPUs = runtime.NumCPU()
	}
	if up, err := os.ReadFile(r.path("proc/uptime")); err == nil {
		if fields := strings.Fields(string(up)); len(fields) > 0 {
			if s, err := strconv.ParseFloat(fields[0], 64); err == nil {
				// Rounded to the minute: the boot time read twice must be the same, and the
				// seconds of uptime read at two moments differ by more than the read.
				f.BootedAt = now.Add(-time.Duration(s * float64(time.Second))).UTC().Round(time.Minute)
			}
		}
	}
	host := thisHost
	if r.Host != nil {
		host = r.Host
	}
	h := host()
	f.Kernel, f.Arch, f.Hostname = h.Kernel, h.Arch, h.Hostname
	f.DiskBytes, f.DiskFreeBytes = h.DiskBytes, down(h.DiskFree, channel.FactsDiskStep)
	f.Addresses = h.Addresses
	if len(f.Addresses) > channel.MaxFactAddresses {
		f.Addresses = f.Addresses[:channel.MaxFactAddresses]
	}
	for _, s := range []*string{&f.OS, &f.OSName, &f.Kernel, &f.Arch, &f.Hostname, &f.CPUModel} {
		*s = clip(*s)
	}
	return f
}

func (r *Reader) path(rel string) string {
	root := r.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, rel)
}

// keyValues reads a file of KEY<sep>value lines (os-release, meminfo), unquoting values.
func (r *Reader) keyValues(rel, sep string) map[string]string {
	data, err := os.ReadFile(r.path(rel))
	if err != nil {
		return nil
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		} else {
			v = strings.Trim(v, `'"`)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}

// cpus counts the processors /proc/cpuinfo lists and names the first one's model.
func (r *Reader) cpus() (int, string) {
	data, err := os.ReadFile(r.path("proc/cpuinfo"))
	if err != nil {
		return 0, ""
	}
	n, model := 0, ""
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "processor":
			n++
		case "model name", "Model":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		}
	}
	return n, model
}

// kib reads meminfo's "123 kB" as bytes.
func kib(v string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n << 10
}

func down(v, step int64) int64 { return v - v%step }

func clip(s string) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) > channel.MaxFactText {
		s = strings.ToValidUTF8(s[:channel.MaxFactText], "")
	}
	return s
}

// addresses lists the machine's global unicast addresses: what an admin searches a node by.
func addresses() []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		out = append(out, ipn.IP.String())
	}
	return out
}
