package pkgmgr

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// maxFilesPerProcess bounds the replaced files reported per process.
const maxFilesPerProcess = 16

// codeDirs are where packages put code: a replaced file elsewhere (a deleted temporary file, a
// memfd, shared memory) is no package's doing.
var codeDirs = []string{"/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/", "/opt/"}

// ReplacedFiles reads /proc/PID/maps (and the exe link's target) and returns the code files the
// process maps that are gone from disk: the kernel marks a mapping whose file was unlinked or
// replaced by a rename, as dpkg replaces files, " (deleted)". Paths are as the reader sees them; root
// (the process's root as this process sees it) is cut from their front.
func ReplacedFiles(maps []byte, exe, root string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		p, ok := strings.CutSuffix(p, " (deleted)")
		if !ok {
			return
		}
		if root != "/" {
			rest, ok := strings.CutPrefix(p, root)
			if !ok || !strings.HasPrefix(rest, "/") {
				return
			}
			p = rest
		}
		if seen[p] || !slices.ContainsFunc(codeDirs, func(d string) bool { return strings.HasPrefix(p, d) }) {
			return
		}
		seen[p] = true
		if len(out) < maxFilesPerProcess {
			out = append(out, p)
		}
	}
	if exe != "" {
		add(exe)
	}
	sc := newScanner(maps)
	for sc.Scan() {
		// address perms offset dev inode pathname; the path may hold spaces.
		f := strings.SplitN(sc.Text(), " ", 6)
		if len(f) < 6 {
			continue
		}
		if p := strings.TrimLeft(f[5], " "); strings.HasPrefix(p, "/") {
			add(p)
		}
	}
	return out
}

// UnitOf reads /proc/PID/cgroup and returns the systemd service the process runs in ("" for none):
// the unified hierarchy's line "0::/system.slice/nginx.service", or v1's name=systemd line.
func UnitOf(cgroup []byte) string {
	sc := newScanner(cgroup)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 || (f[1] != "" && f[1] != "name=systemd") {
			continue
		}
		for _, part := range slices.Backward(strings.Split(f[2], "/")) {
			if strings.HasSuffix(part, ".service") && systemd.ValidName(part) {
				return part
			}
		}
	}
	return ""
}

// ParseStat returns a process's command and parent pid from /proc/PID/stat ("pid (comm) state ppid
// ..."; comm may hold spaces and parentheses, so it is cut at the last ")").
func ParseStat(stat []byte) (comm string, ppid int, ok bool) {
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return "", 0, false
	}
	return s[open+1 : end], ppid, true
}

// scanProc lists the processes sharing root (compared by device and inode, so another container or
// chroot is left out) that run replaced code. Processes that end or cannot be read during the scan
// are skipped.
func scanProc(proc, root string) []capv1.StaleProcess {
	var want syscall.Stat_t
	if syscall.Stat(root, &want) != nil {
		return nil
	}
	entries, _ := os.ReadDir(proc)
	out := []capv1.StaleProcess{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(proc, e.Name())
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join(dir, "root"), &st) != nil || st.Dev != want.Dev || st.Ino != want.Ino {
			continue
		}
		maps, err := os.ReadFile(filepath.Join(dir, "maps"))
		if err != nil || len(maps) == 0 {
			continue // a kernel thread, or gone
		}
		exe, _ := os.Readlink(filepath.Join(dir, "exe"))
		files := ReplacedFiles(maps, exe, root)
		if len(files) == 0 {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(dir, "stat"))
		comm, ppid, _ := ParseStat(stat)
		cg, _ := os.ReadFile(filepath.Join(dir, "cgroup"))
		exePath := strings.TrimSuffix(exe, " (deleted)")
		if root != "/" {
			exePath = strings.TrimPrefix(exePath, root)
		}
		out = append(out, capv1.StaleProcess{PID: pid, PPID: ppid, Command: comm, Exe: exePath, Unit: UnitOf(cg), Files: files})
	}
	return out
}
