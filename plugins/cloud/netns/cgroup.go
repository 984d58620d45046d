package main

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Services in an instance run in cgroups named as systemd names them (…/system.slice/NAME.service),
// so what reads /proc/PID/cgroup to tell which unit a process belongs to (the host's scan for
// replaced code, needrestart) finds it as it would on a machine run by systemd. Nothing is limited:
// no controller is enabled, the groups only name. Each instance's groups live under
// lexicon-netns/ID in the host's systemd-named hierarchy, or the unified one where that is all there
// is; with neither, services run unnamed.
//
// The helper cannot reach the host's hierarchy from inside (ip netns exec mounts a fresh /sys), so
// the driver names the kind it found (envCgroup) and the entering helper mounts that same hierarchy
// again, then binds the instance's own group over it.

// Kinds of hierarchy that name units.
const (
	cgroupSystemd = "systemd" // v1, named systemd
	cgroupUnified = "cgroup2"
)

// cgroupDir is where an instance sees its own cgroup tree: a folder of the instance's, bound to its
// group when the instance is entered.
func cgroupDir(dir string) string { return filepath.Join(dir, "cgroup") }

// cgroupMount finds the host's hierarchy that names units, and its kind: the v1 hierarchy named
// systemd, else the unified one; "" with neither.
func cgroupMount() (path, kind string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 35 0:30 / /sys/fs/cgroup/systemd rw,… shared:9 - cgroup cgroup rw,name=systemd"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(after) < 3 || fields[3] != "/" {
			continue
		}
		switch {
		case after[0] == "cgroup" && slices.Contains(strings.Split(after[2], ","), "name=systemd"):
			return fields[4], cgroupSystemd
		case after[0] == "cgroup2" && kind == "":
			path, kind = fields[4], cgroupUnified
		}
	}
	return path, kind
}

// hostCgroup is instance id's group on the host ("" without a hierarchy that names units).
func hostCgroup(id string) string {
	mount, _ := cgroupMount()
	if mount == "" {
		return ""
	}
	return filepath.Join(mount, "lexicon-netns", id)
}

// bindCgroup mounts the hierarchy of the kind the driver named at target (the instance's cgroupDir as
// the entering helper sees it) and binds the instance's group over it, made if new. Best effort: on
// failure services run unnamed.
func bindCgroup(dir, target string) {
	kind := os.Getenv(envCgroup)
	_ = os.Unsetenv(envCgroup)
	var err error
	if err = os.MkdirAll(target, 0o755); err != nil {
		return
	}
	switch kind {
	case cgroupSystemd:
		err = unix.Mount("cgroup", target, "cgroup", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "none,name=systemd")
	case cgroupUnified:
		err = unix.Mount("cgroup2", target, "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	default:
		return
	}
	if err != nil {
		return
	}
	own := filepath.Join(target, "lexicon-netns", filepath.Base(dir))
	if os.MkdirAll(own, 0o755) != nil || unix.Mount(own, target, "", unix.MS_BIND, "") != nil {
		_ = unix.Unmount(target, unix.MNT_DETACH)
	}
}

// joinUnitCgroup moves the calling process (a unit's supervisor, so the service it starts is born
// there) into the unit's group, when the instance has a cgroup tree.
func joinUnitCgroup(dir, unit string) {
	var st unix.Statfs_t
	root := cgroupDir(dir)
	if unix.Statfs(root, &st) != nil || (st.Type != unix.CGROUP_SUPER_MAGIC && st.Type != unix.CGROUP2_SUPER_MAGIC) {
		return
	}
	g := filepath.Join(root, "system.slice", unit)
	if err := os.MkdirAll(g, 0o755); err != nil {
		logLine("cgroup " + g + ": " + err.Error())
		return
	}
	if err := os.WriteFile(filepath.Join(g, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		logLine("cgroup " + g + ": " + err.Error())
	}
}

// removeCgroup removes instance id's groups on the host, deepest first, once nothing runs in them.
func removeCgroup(id string) error {
	host := hostCgroup(id)
	if host == "" {
		return nil
	}
	var dirs []string
	err := filepath.WalkDir(host, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range slices.Backward(dirs) {
		// cgroupfs folders hold only their interface files: rmdir is how a group is removed.
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
