package health

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
)

// Memory is one sample of a replica's memory, in bytes.
type Memory struct {
	Heap int64 // the Go heap in use (live and not yet swept objects)
	RSS  int64 // resident set size, 0 where /proc cannot tell
}

// SampleMemory reads the Go heap from the runtime and the RSS from /proc/self/statm.
func SampleMemory() Memory {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	var m Memory
	if s[0].Value.Kind() == metrics.KindUint64 {
		m.Heap = int64(s[0].Value.Uint64())
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				m.RSS = pages * int64(os.Getpagesize())
			}
		}
	}
	return m
}

// MemoryLimit is the memory this process may use: its cgroup's limit (cgroup v2 memory.max of the
// process's own cgroup) when one is set, else the machine's MemTotal, and the smaller of the two when
// both are known. root is the filesystem root ("/" outside tests). 0 means unknown.
func MemoryLimit(root string) int64 {
	total := memTotal(filepath.Join(root, "proc/meminfo"))
	limit := cgroupLimit(root)
	switch {
	case limit > 0 && total > 0:
		return min(limit, total)
	case limit > 0:
		return limit
	}
	return total
}

// cgroupLimit reads memory.max of the process's cgroup v2 (from /proc/self/cgroup's "0::" line), or
// of the root cgroup mount when that line is missing. "max" or anything unreadable is 0.
func cgroupLimit(root string) int64 {
	dir := ""
	if b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				dir = strings.TrimSpace(p)
			}
		}
	}
	for _, d := range []string{dir, "/"} {
		b, err := os.ReadFile(filepath.Join(root, "sys/fs/cgroup", d, "memory.max"))
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// memTotal reads MemTotal (kB) from a meminfo file; 0 if it cannot.
func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 {
			return 0
		}
		return kb << 10
	}
	return 0
}
