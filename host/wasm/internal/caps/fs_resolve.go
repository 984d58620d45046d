package caps

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Paths are resolved by a walk of our own, one component at a time, each opened O_PATH|O_NOFOLLOW
// relative to the directory before it. A symlink met on the way is read and its target, made absolute
// and cleaned, must again lie beneath the same declared root; the walk then restarts from the root's
// descriptor. Nothing is ever resolved by the kernel across a symlink, so a link (or a rename racing the
// walk) cannot lead outside the root, and in-root absolute links such as Debian's sites-enabled still
// work, which openat2's RESOLVE_BENEATH would refuse.
//
// The declared root itself is reached the same way, from "/": a symlink anywhere on the way to it (the
// root, its parent, any folder above) is refused, never followed, since whoever can write the folder
// above a root could otherwise point the root at /etc. For fs.write the folders above the root must also
// be ones only root (or the agent's own user) can change, so that nobody else can swap the root for a
// folder of their choosing between two calls.

// maxHops bounds the symlinks one resolution follows, as the kernel's ELOOP limit does.
const maxHops = 40

// within returns the declared root p lies beneath, or denies p. p must be absolute and clean.
func within(cap string, roots []string, p string) (string, error) {
	if p == "" || !filepath.IsAbs(p) {
		return "", invalid("path", "path %q must be absolute", p)
	}
	if filepath.Clean(p) != p || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return "", denied(cap, "path %q is not clean (no \"..\", \".\" or repeated slashes)", p).With(errcode.DetailPath, p)
	}
	best := ""
	for _, r := range roots {
		if under(r, p) && len(r) > len(best) {
			best = r
		}
	}
	if best == "" {
		return "", denied(cap, "path %q is not beneath a declared root", p).With(errcode.DetailPath, p)
	}
	return best, nil
}

func under(root, p string) bool {
	return root == "/" || p == root || strings.HasPrefix(p, root+"/")
}

// open resolves path for capability c: it must lie beneath one of c's declared roots.
func open(c manifest.Capability, path string, followLast bool) (*resolved, error) {
	root, err := within(c.Cap, c.Paths, path)
	if err != nil {
		return nil, err
	}
	return resolve(c.Cap, root, path, followLast)
}

// resolved is an open path: fd is an O_PATH descriptor of the final component (a symlink itself when
// the walk was told not to follow a final link), dir an O_PATH descriptor of its parent, name its last
// component and path the path the walk actually took to it (links beneath the root followed).
type resolved struct {
	fd, dir    int
	name, path string
}

func (r *resolved) close() {
	if r.fd >= 0 {
		unix.Close(r.fd)
	}
	if r.dir >= 0 && r.dir != r.fd {
		unix.Close(r.dir)
	}
}

// openRoot opens the declared root by a walk from "/", one component at a time with O_NOFOLLOW: a
// symlink anywhere on the way is capability.denied, naming the component. With checkAncestors every
// folder from "/" down to the root's parent must pass safeAncestor.
func openRoot(cap, root string, checkAncestors bool) (int, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fsError(cap, root, err)
	}
	cur := "/"
	for c := range strings.SplitSeq(strings.Trim(root, "/"), "/") {
		if c == "" {
			continue // the root is "/"
		}
		if checkAncestors {
			if err := safeAncestor(cap, root, cur, fd); err != nil {
				unix.Close(fd)
				return -1, err
			}
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fsError(cap, root, err)
		}
		cur = filepath.Join(cur, c)
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, fsError(cap, root, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			unix.Close(next)
			return -1, denied(cap, "the declared root %s leads through %s, a symlink", root, cur).With(errcode.DetailPath, root).With(errcode.DetailComponent, cur)
		default:
			unix.Close(next)
			return -1, fsError(cap, root, unix.ENOTDIR)
		}
		fd = next
	}
	return fd, nil
}

// safeAncestor refuses folder (open as fd), a folder above the root, when someone other than root or
// the agent's own user could rename or replace what it holds: it is owned by another user, or group or
// others may write it. A sticky folder such as /tmp counts as writable by others: the sticky bit only
// stops users removing each other's entries, and anyone may create the root's name there first.
func safeAncestor(cap, root, folder string, fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fsError(cap, root, err)
	}
	why := ""
	switch {
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		why = "is owned by another user"
	case st.Mode&0o022 != 0:
		why = "is writable by group or others"
	}
	if why == "" {
		return nil
	}
	return errcode.New(errcode.CapabilityRootUnsafe, "%s: the declared root %s is not safe to write beneath: %s %s, so someone other than root could swap the root",
		cap, root, folder, why).With(errcode.DetailCap, cap).With(errcode.DetailPath, root).With(errcode.DetailFolder, folder)
}

// resolve walks p beneath root. followLast says whether a symlink as last component is followed. The
// root is opened by openRoot; for fs.write, fs.remove and fs.install its ancestors are checked too.
func resolve(cap, root, p string, followLast bool) (*resolved, error) {
	rootfd, err := openRoot(cap, root, cap == capv1.CapFSWrite || cap == capv1.CapFSRemove || cap == capv1.CapFSInstall)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rootfd)
	hops := 0
	target := p
restart:
	rel := strings.TrimPrefix(strings.TrimPrefix(target, root), "/")
	if root == "/" {
		rel = strings.TrimPrefix(target, "/")
	}
	dir, err := unix.Dup(rootfd)
	if err != nil {
		return nil, fsError(cap, p, err)
	}
	if rel == "" {
		fd, err := unix.Dup(rootfd)
		if err != nil {
			unix.Close(dir)
			return nil, fsError(cap, p, err)
		}
		return &resolved{fd: fd, dir: dir, name: ".", path: root}, nil
	}
	comps := strings.Split(rel, "/")
	cur := root
	for i, c := range comps {
		last := i == len(comps)-1
		fd, err := unix.Openat(dir, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(dir)
			return nil, fsError(cap, p, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			unix.Close(dir)
			return nil, fsError(cap, p, err)
		}
		next := filepath.Join(cur, c)
		if st.Mode&unix.S_IFMT == unix.S_IFLNK && (!last || followLast) {
			link, err := readlinkFd(fd)
			unix.Close(fd)
			unix.Close(dir)
			if err != nil {
				return nil, fsError(cap, p, err)
			}
			if hops++; hops > maxHops {
				return nil, denied(cap, "path %q has too many symlinks", p).With(errcode.DetailPath, p)
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(cur, link)
			}
			link = filepath.Clean(link)
			rest := strings.Join(comps[i+1:], "/")
			if rest != "" {
				link = filepath.Join(link, rest)
			}
			if !under(root, link) {
				return nil, denied(cap, "path %q leads through a symlink out of its root %s", p, root).With(errcode.DetailPath, p)
			}
			target = link
			goto restart
		}
		if last {
			return &resolved{fd: fd, dir: dir, name: c, path: next}, nil
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			unix.Close(fd)
			unix.Close(dir)
			return nil, fsError(cap, p, unix.ENOTDIR)
		}
		unix.Close(dir)
		dir, cur = fd, next
	}
	panic("unreachable")
}

// reopen opens the resolved final component for I/O with flags, refusing to follow a symlink put in its
// place since the walk (O_NOFOLLOW) and to block on a FIFO (O_NONBLOCK).
func (r *resolved) reopen(flags int) (int, error) {
	if r.name == "." {
		return unix.Openat(r.fd, ".", flags|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	}
	return unix.Openat(r.dir, r.name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
}

func readlinkFd(fd int) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// fsError maps an errno to a capability code.
func fsError(cap, p string, err error) error {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return errcode.Wrap(err, errcode.CapabilityFailed, "%s %s failed", cap, p).With(errcode.DetailPath, p)
	}
	switch errno {
	case unix.ENOENT:
		return errcode.New(errcode.CapabilityNotFound, "%s: %s does not exist", cap, p).With(errcode.DetailPath, p)
	case unix.ENOTDIR:
		return errcode.New(errcode.CapabilityNotFound, "%s: a component of %s is not a directory", cap, p).With(errcode.DetailPath, p)
	case unix.ELOOP:
		return denied(cap, "%s was replaced by a symlink", p).With(errcode.DetailPath, p)
	}
	return errcode.Wrap(err, errcode.CapabilityFailed, "%s %s: %v", cap, p, errno).With(errcode.DetailPath, p).With(errcode.DetailErrno, errno.Error())
}
