package caps

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// procRoot is where the machine's facts are read from.
const procRoot = "/"

func readFact(p string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(procRoot, p))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func sysFacts(context.Context, *Word, manifest.Capability, []byte) (any, error) {
	var f capv1.Facts
	unknown := func(name string) { f.Unknown = append(f.Unknown, name) }
	if h, ok := readFact("proc/sys/kernel/hostname"); ok {
		f.Hostname = h
	} else if h, err := os.Hostname(); err == nil {
		f.Hostname = h
	} else {
		unknown("hostname")
	}
	if osr, ok := osRelease(); ok {
		f.OS = osr
	} else {
		unknown("os")
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		f.Kernel = unix.ByteSliceToString(u.Release[:])
		f.Arch = unix.ByteSliceToString(u.Machine[:])
	} else {
		unknown("kernel")
		f.Arch = runtime.GOARCH
	}
	if s, ok := readFact("proc/uptime"); ok {
		if fields := strings.Fields(s); len(fields) > 0 {
			f.UptimeS, _ = strconv.ParseFloat(fields[0], 64)
		}
	} else {
		unknown("uptime_s")
	}
	if s, ok := readFact("proc/sys/kernel/random/boot_id"); ok {
		f.BootID = s
	} else {
		unknown("boot_id")
	}
	if s, ok := readFact("proc/loadavg"); ok {
		fields := strings.Fields(s)
		for i := 0; i < 3 && i < len(fields); i++ {
			v, _ := strconv.ParseFloat(fields[i], 64)
			f.Load = append(f.Load, v)
		}
	} else {
		unknown("load")
	}
	if m, ok := memInfo(); ok {
		f.Memory = m
	} else {
		unknown("memory")
	}
	f.CPUs = onlineCPUs()
	return f, nil
}

func osRelease() (capv1.OSRelease, bool) {
	for _, p := range []string{"etc/os-release", "usr/lib/os-release"} {
		b, err := os.ReadFile(filepath.Join(procRoot, p))
		if err != nil {
			continue
		}
		var o capv1.OSRelease
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
			if !ok {
				continue
			}
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			} else {
				v = strings.Trim(v, `'"`)
			}
			switch k {
			case "ID":
				o.ID = v
			case "VERSION_ID":
				o.VersionID = v
			case "PRETTY_NAME":
				o.PrettyName = v
			}
		}
		return o, true
	}
	return capv1.OSRelease{}, false
}

func memInfo() (capv1.Memory, bool) {
	b, err := os.ReadFile(filepath.Join(procRoot, "proc/meminfo"))
	if err != nil {
		return capv1.Memory{}, false
	}
	var m capv1.Memory
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 2 && f[2] == "kB" {
			v *= 1024
		}
		switch f[0] {
		case "MemTotal:":
			m.Total = v
		case "MemAvailable:":
			m.Available = v
		case "SwapTotal:":
			m.SwapTotal = v
		case "SwapFree:":
			m.SwapFree = v
		}
	}
	return m, m.Total > 0
}

// onlineCPUs counts the machine's online CPUs, not just the ones this process may use.
func onlineCPUs() int {
	s, ok := readFact("sys/devices/system/cpu/online")
	if !ok {
		return runtime.NumCPU()
	}
	n := 0
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a {
			return runtime.NumCPU()
		}
		n += b - a + 1
	}
	return n
}

// pseudoFS are filesystems that hold no disk space worth reporting.
var pseudoFS = map[string]bool{
	"proc": true, "sysfs": true, "devtmpfs": true, "devpts": true, "cgroup": true, "cgroup2": true,
	"securityfs": true, "pstore": true, "debugfs": true, "tracefs": true, "configfs": true, "fusectl": true,
	"mqueue": true, "hugetlbfs": true, "bpf": true, "autofs": true, "binfmt_misc": true, "rpc_pipefs": true,
	"nsfs": true, "efivarfs": true, "selinuxfs": true, "ramfs": true, "squashfs": true, "tmpfs": true,
}

type mount struct{ dev, dir, fstype string }

func mounts() ([]mount, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, "proc/self/mounts"))
	if err != nil {
		return nil, err
	}
	var out []mount
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		out = append(out, mount{dev: unescapeMount(f[0]), dir: unescapeMount(f[1]), fstype: f[2]})
	}
	return out, nil
}

// unescapeMount undoes the octal escapes (\040 for a space) of /proc/self/mounts.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// statDisk reports the filesystem holding fd, labelled with mount m.
func statDisk(fd int, m mount) (capv1.Disk, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return capv1.Disk{}, err
	}
	bs := uint64(st.Bsize)
	if st.Frsize > 0 {
		bs = uint64(st.Frsize)
	}
	return capv1.Disk{
		Mount: m.dir, Device: m.dev, FSType: m.fstype,
		Total: st.Blocks * bs, Free: st.Bfree * bs, Available: st.Bavail * bs,
		Inodes: st.Files, InodesFree: st.Ffree,
	}, nil
}

// sysDisk reaches every path as fs.* does (the walk from "/" that refuses links on the way to a root and
// links out of it) and asks statfs of the descriptor it ends at, so a link cannot report on a
// filesystem outside the declared roots.
func sysDisk(_ context.Context, _ *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.SysDisk
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	roots := c.Paths
	if len(roots) == 0 {
		roots = []string{"/"}
	}
	for _, r := range roots {
		fd, err := openRoot(c.Cap, r, false)
		if err != nil {
			return nil, err
		}
		unix.Close(fd)
	}
	ms, err := mounts()
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityUnknown, "the mount table cannot be read").With(errcode.DetailReason, "no /proc/self/mounts")
	}
	if req.Path != "" {
		r, err := open(manifest.Capability{Cap: c.Cap, Paths: roots}, req.Path, true)
		if err != nil {
			return nil, err
		}
		defer r.close()
		best := mount{dir: "/"}
		for _, m := range ms {
			if under(m.dir, r.path) && len(m.dir) >= len(best.dir) {
				best = m
			}
		}
		d, err := statDisk(r.fd, best)
		if err != nil {
			return nil, fsError(c.Cap, req.Path, err)
		}
		return capv1.SysDiskResult{Disks: []capv1.Disk{d}}, nil
	}
	out := capv1.SysDiskResult{Disks: []capv1.Disk{}}
	seen := map[string]bool{}
	for _, m := range ms {
		if pseudoFS[m.fstype] || seen[m.dev] {
			continue
		}
		root, err := within(c.Cap, roots, m.dir)
		if err != nil {
			continue
		}
		r, err := resolve(c.Cap, root, m.dir, true)
		if err != nil {
			continue // a mount reached through a link, or gone
		}
		d, err := statDisk(r.fd, m)
		r.close()
		if err != nil || d.Total == 0 {
			continue
		}
		seen[m.dev] = true
		out.Disks = append(out.Disks, d)
	}
	return out, nil
}
