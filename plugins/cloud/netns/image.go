package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// An image other than "host" is a machine root (a Debian 12 made by mmdebstrap) that each instance
// overlay-mounts as its own: the image is the read-only lower layer, the instance's changes go to its
// own upper layer, so every instance has its own /usr, /etc, /var/lib/dpkg and apt, and neither the
// image nor the host's own files are ever written. Inside, the instance's processes see the overlay as
// "/" (pivot_root), with their own /proc, the image's device nodes, and the instance's bound folders
// where they are on the host image.
//
//	<root>/rootfs/<id>/upper     the instance's changes
//	<root>/rootfs/<id>/work      overlayfs' work folder
//	<root>/rootfs/<id>/merged    the instance's root, mounted while its namespace exists
//	<root>/instances/<id>/image  the image's name, so the helper inside knows it has a root of its own

// HostImage is the image whose instances run on the host's own filesystem.
const HostImage = "host"

var imageNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,31}$`)

// checkImages checks the images setting's shape (driver.config_invalid): names, and absolute clean
// paths outside the folders instances see as their own.
func checkImages(images map[string]string) error {
	for name, root := range images {
		field := "/images/" + name
		switch {
		case name == HostImage || !imageNameRE.MatchString(name):
			return fmt.Errorf("%s: %q is not an image name this setting may define", field, name)
		case !filepath.IsAbs(root) || filepath.Clean(root) != root || root == "/":
			return fmt.Errorf("%s: %q must be an absolute, clean path other than /", field, root)
		}
	}
	return nil
}

// checkImageRoot checks an image's root can be trusted as every instance's lower layer: a folder
// owned by this user that nobody else can write, holding a machine (usr/bin).
func checkImageRoot(root string) error {
	fi, err := os.Lstat(root)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder", root)
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s is not owned by this user", root)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others (mode %o)", root, fi.Mode().Perm())
	}
	if fi, err := os.Lstat(filepath.Join(root, "usr", "bin")); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s holds no machine (no usr/bin)", root)
	}
	return nil
}

func (s *stateRoot) rootfs(id string) string { return filepath.Join(s.path, "rootfs", id) }

// mounted reports whether dir is a mount point (its device differs from its parent's).
func mounted(dir string) bool {
	var a, b unix.Stat_t
	if unix.Lstat(dir, &a) != nil || unix.Lstat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

// mountRootfs mounts rec's overlay unless it is mounted (it is gone after the host restarts).
func (s *stateRoot) mountRootfs(rec *record) error {
	if rec.ImageRoot == "" || !idRE.MatchString(rec.ID) {
		return nil
	}
	base := s.rootfs(rec.ID)
	merged := filepath.Join(base, "merged")
	for _, d := range []string{"upper", "work", "merged"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			return err
		}
	}
	if mounted(merged) {
		return nil
	}
	if err := checkImageRoot(rec.ImageRoot); err != nil {
		return err
	}
	if strings.ContainsAny(rec.ImageRoot+base, ",:") {
		return fmt.Errorf("overlayfs cannot take a path holding ',' or ':' (%s)", rec.ImageRoot)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", rec.ImageRoot, filepath.Join(base, "upper"), filepath.Join(base, "work"))
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_NOSUID, opts); err != nil {
		return fmt.Errorf("mount the instance's root: %w", err)
	}
	return nil
}

// prepareRootfs readies a new instance's root: the shim where the agent's host looks for systemctl,
// and systemd's marker of a running service manager (the shim stands in for one here).
func (s *stateRoot) prepareRootfs(rec *record) error {
	merged := filepath.Join(s.rootfs(rec.ID), "merged")
	if err := os.MkdirAll(filepath.Join(merged, "run/systemd/system"), 0o755); err != nil {
		return err
	}
	link := filepath.Join(merged, "usr/sbin/systemctl")
	if _, err := os.Lstat(link); err == nil {
		return nil
	}
	return os.Symlink(filepath.Join(s.dir(rec.ID), "shim", "systemctl"), link)
}

// removeRootfs unmounts rec's root and removes its layers; what is already gone is no error.
func (s *stateRoot) removeRootfs(id string) error {
	if !idRE.MatchString(id) {
		return nil
	}
	base := s.rootfs(id)
	merged := filepath.Join(base, "merged")
	if mounted(merged) {
		if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount the instance's root: %w", err)
		}
	}
	// The work folder holds a folder overlayfs made unreadable; make it removable first.
	_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(base)
}

// enterRootfs makes the instance's overlay this mount namespace's "/": the instance's folders are
// bound where they belong, its own folder and the helper at their host paths (the shim and the
// supervisors find them there), a fresh /proc, and the host's tree is let go of. The namespace is
// private (unshare --propagation private), so none of this reaches the host.
func enterRootfs(dir, merged string) error {
	bind := func(src, target string, readOnly bool) error {
		t := filepath.Join(merged, target)
		if err := os.MkdirAll(t, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(src, t, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", target, err)
		}
		if readOnly {
			return unix.Mount("", t, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
		}
		return nil
	}
	for _, m := range mounts {
		if err := bind(filepath.Join(dir, "fs", m.dir), m.target, false); err != nil {
			return err
		}
	}
	if err := bind(dir, dir, false); err != nil {
		return err
	}
	bindCgroup(dir, filepath.Join(merged, cgroupDir(dir)))
	if err := bind(filepath.Dir(helperPath(rootOf(dir))), filepath.Dir(helperPath(rootOf(dir))), true); err != nil {
		return err
	}
	if err := unix.Mount("proc", filepath.Join(merged, "proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	if err := unix.Chdir(merged); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("let go of the host's tree: %w", err)
	}
	return unix.Chdir("/")
}

// imageOf is the image an instance folder's instance runs ("host" when it has no root of its own).
func imageOf(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "image"))
	if err != nil {
		return HostImage
	}
	return strings.TrimSpace(string(b))
}
