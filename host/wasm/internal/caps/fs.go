package caps

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

const (
	defaultListLimit = 1000
	maxListLimit     = 10000
	// duBudget bounds the inodes one fs.list with sizes visits, so a huge tree answers partial, not late.
	duBudget = 500_000
)

func fsRead(_ context.Context, _ *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FSRead
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Length < 0 {
		return nil, invalid("offset", "offset and length must not be negative")
	}
	r, err := open(c, req.Path, true)
	if err != nil {
		return nil, err
	}
	defer r.close()
	fd, err := r.reopen(unix.O_RDONLY)
	if err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, denied(c.Cap, "%s is not a regular file", req.Path).With(errcode.DetailPath, req.Path)
	}
	n := maxBytes(c)
	if req.Length > 0 && req.Length < n {
		n = req.Length
	}
	if remaining := st.Size - req.Offset; remaining < n {
		n = max(remaining, 0)
	}
	buf := make([]byte, n)
	got := 0
	for got < len(buf) {
		k, err := unix.Pread(fd, buf[got:], req.Offset+int64(got))
		if err != nil {
			return nil, fsError(c.Cap, req.Path, err)
		}
		if k == 0 {
			break
		}
		got += k
	}
	return capv1.FSReadResult{Data: buf[:got], Size: st.Size, EOF: req.Offset+int64(got) >= st.Size}, nil
}

func fsStat(_ context.Context, _ *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FSStat
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	r, err := open(c, req.Path, false)
	if err != nil {
		return nil, err
	}
	defer r.close()
	var st unix.Stat_t
	if err := unix.Fstat(r.fd, &st); err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	info := fileInfo(filepath.Base(req.Path), &st)
	if info.Type == capv1.TypeSymlink {
		info.Target, _ = readlinkFd(r.fd)
	}
	return info, nil
}

func fileInfo(name string, st *unix.Stat_t) capv1.FileInfo {
	t := capv1.TypeOther
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		t = capv1.TypeFile
	case unix.S_IFDIR:
		t = capv1.TypeDir
	case unix.S_IFLNK:
		t = capv1.TypeSymlink
	}
	return capv1.FileInfo{
		Name: name, Type: t, Size: st.Size, Mode: st.Mode & 0o7777,
		ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec).UTC(), UID: st.Uid, GID: st.Gid,
	}
}

func fsList(ctx context.Context, _ *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FSList
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.Limit < 0 {
		return nil, invalid("limit", "limit must not be negative")
	}
	limit := defaultListLimit
	if req.Limit > 0 {
		limit = min(req.Limit, maxListLimit)
	}
	r, err := open(c, req.Path, true)
	if err != nil {
		return nil, err
	}
	defer r.close()
	dirfd, err := r.reopen(unix.O_RDONLY | unix.O_DIRECTORY)
	if err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	f := os.NewFile(uintptr(dirfd), req.Path)
	defer f.Close()
	var dst unix.Stat_t
	if err := unix.Fstat(dirfd, &dst); err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	names, err := f.Readdirnames(limit + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fsError(c.Cap, req.Path, err)
	}
	out := capv1.FSListResult{Entries: []capv1.FileInfo{}}
	if len(names) > limit {
		names, out.Truncated = names[:limit], true
	}
	slices.Sort(names)
	budget := duBudget
	size := 0
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone since it was listed
		}
		info := fileInfo(name, &st)
		if req.Sizes {
			info.Size = st.Blocks * 512
			if info.Type == capv1.TypeDir {
				n, partial := du(ctx, dirfd, name, dst.Dev, &budget)
				info.Size += n
				out.Partial = out.Partial || partial
			}
		}
		if c.MaxBytes > 0 {
			b, _ := json.Marshal(info)
			if size += len(b) + 1; int64(size) > c.MaxBytes {
				out.Truncated = true
				break
			}
		}
		out.Entries = append(out.Entries, info)
	}
	return out, nil
}

// du sums the bytes allocated beneath name (a directory in dirfd), staying on device dev and never
// following a symlink. It reports partial when it could not read everything or ran out of budget.
func du(ctx context.Context, dirfd int, name string, dev uint64, budget *int) (total int64, partial bool) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, true
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if *budget--; *budget < 0 || ctx.Err() != nil {
				return total, true
			}
			var st unix.Stat_t
			if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				partial = true
				continue
			}
			total += st.Blocks * 512
			if st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Dev == dev {
				sub, p := du(ctx, fd, n, dev, budget)
				total += sub
				partial = partial || p
			}
		}
		if err != nil || len(names) == 0 {
			return total, partial
		}
	}
}

func fsWrite(_ context.Context, _ *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FSWrite
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.Mode&^0o7777 != 0 {
		return nil, invalid("mode", "mode %o has bits beyond permissions", req.Mode)
	}
	// With the agent running as root, a setuid or setgid file a word writes would be a program anyone
	// could run as root; the sticky bit means nothing on a file. Refused rather than dropped, so a word
	// that asks learns it did not get them.
	if req.Mode&0o7000 != 0 {
		return nil, invalid("mode", "mode %o sets setuid, setgid or sticky bits, which fs.write never writes", req.Mode)
	}
	if int64(len(req.Data)) > maxBytes(c) {
		return nil, denied(c.Cap, "%d bytes is over the declared %d", len(req.Data), maxBytes(c)).With(errcode.DetailPath, req.Path)
	}
	root, err := within(c.Cap, c.Paths, req.Path)
	if err != nil {
		return nil, err
	}
	if req.Path == root {
		return nil, denied(c.Cap, "the root %s itself cannot be written", root).With(errcode.DetailPath, req.Path)
	}
	dirfd, err := openParent(c.Cap, root, req.Path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	name := filepath.Base(req.Path)
	mode, uid, gid := uint32(0o644), -1, -1
	var old unix.Stat_t
	switch err := unix.Fstatat(dirfd, name, &old, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && old.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, denied(c.Cap, "%s exists and is not a regular file", req.Path).With(errcode.DetailPath, req.Path)
	case err == nil:
		// The old file's setuid and setgid bits are not carried over to new content, as the kernel
		// clears them when an unprivileged user writes a file.
		mode, uid, gid = old.Mode&0o777, int(old.Uid), int(old.Gid)
	case err != unix.ENOENT:
		return nil, fsError(c.Cap, req.Path, err)
	}
	if req.Mode != 0 {
		mode = req.Mode
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".lexicon-" + hex.EncodeToString(rnd[:]) + ".tmp"
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	committed := false
	defer func() {
		if !committed {
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	werr := writeAll(fd, req.Data)
	if werr == nil && uid >= 0 && os.Geteuid() == 0 {
		werr = unix.Fchown(fd, uid, gid)
	}
	if werr == nil {
		werr = unix.Fchmod(fd, mode)
	}
	if werr == nil {
		werr = unix.Fsync(fd)
	}
	if cerr := unix.Close(fd); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if werr != nil {
		return nil, fsError(c.Cap, req.Path, werr)
	}
	committed = true
	_ = unix.Fsync(dirfd)
	return capv1.FSWriteResult{Size: int64(len(req.Data)), SHA256: cas.Sum(req.Data)}, nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// openParent opens the folder holding path, beneath root, resolved as a write resolves it (root reached
// from "/" without links, its ancestors checked), for fs.write and fs.remove to act on path's name
// through that one descriptor. The caller closes it.
func openParent(capName, root, path string) (int, error) {
	parent, err := resolve(capName, root, filepath.Dir(path), true)
	if err != nil {
		return -1, err
	}
	defer parent.close()
	dirfd, err := parent.reopen(unix.O_RDONLY | unix.O_DIRECTORY)
	if err != nil {
		return -1, fsError(capName, path, err)
	}
	return dirfd, nil
}
