package archive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Root is one folder to back up: its absolute path and the folder itself, opened by the caller
// (who decides how a path may be reached). The walk beneath it opens every entry relative to its
// folder, never by path, and follows no symlink.
type Root struct {
	Path string
	Dir  *os.File
}

// FilesResult sums up what Files did.
type FilesResult struct {
	// Files and Bytes are the regular files of the tree; Stored and StoredBytes those this run
	// stored (all of them in a full run, the changed ones in an incremental).
	Files       int64 `json:"files"`
	Bytes       int64 `json:"bytes"`
	Stored      int64 `json:"stored"`
	StoredBytes int64 `json:"stored_bytes"`
	Dirs        int64 `json:"dirs"`
	Symlinks    int64 `json:"symlinks"`
	// Skipped are entries of other types (sockets, FIFOs, devices), which are not backed up.
	Skipped int64 `json:"skipped"`
	// Vanished were listed but gone, or unreadable, when the walk came to them.
	Vanished int64 `json:"vanished"`
	// Changed grew or shrank while they were read: the run stored the bytes read, cut or padded with
	// zeros to the size they had when opened, and their digest is of what was stored.
	Changed int64 `json:"changed"`
	// Segments are the objects the files stream took.
	Segments int `json:"segments"`
}

// Files walks the roots in order and stores the tree as the run's files stream: every folder,
// symlink and regular file in the index, and in the tar stream every file that is new or changed
// since the parent (every file, in a full run). A run has one files stream, so Files is called once.
func (w *Writer) Files(ctx context.Context, roots []Root) (FilesResult, error) {
	if err := w.usable(); err != nil {
		return FilesResult{}, err
	}
	if w.files != nil {
		return FilesResult{}, errcode.New(errcode.CapabilityInvalid, "the run already holds its files")
	}
	if len(roots) == 0 || len(roots) > backup.MaxRoots {
		return FilesResult{}, errcode.New(errcode.CapabilityInvalid, "a run backs up 1 to %d folders", backup.MaxRoots).With(errcode.DetailField, "paths")
	}
	for i, r := range roots {
		if !backup.ValidRoot(r.Path) || r.Dir == nil {
			return FilesResult{}, errcode.New(errcode.CapabilityInvalid, "%q is not an absolute clean path below /", r.Path).With(errcode.DetailPath, r.Path)
		}
		for _, o := range roots[:i] {
			if backup.Beneath(o.Path, r.Path) || backup.Beneath(r.Path, o.Path) {
				return FilesResult{}, errcode.New(errcode.CapabilityInvalid, "%s and %s overlap", o.Path, r.Path).With(errcode.DetailPath, r.Path)
			}
		}
	}
	s := w.newStream(ctx, backup.RoleFiles, "")
	fw := &filesWriter{ctx: ctx, w: w, tw: tar.NewWriter(s), buf: make([]byte, 1<<20), sum: sha256.New()}
	var err error
	for _, r := range roots {
		w.index.Header.Roots = append(w.index.Header.Roots, r.Path)
		if err = fw.root(r); err != nil {
			break
		}
	}
	if err == nil {
		err = fw.tw.Close()
	}
	if err != nil {
		s.abandon()
		w.fail(err)
		return FilesResult{}, err
	}
	if err := s.close(); err != nil {
		return FilesResult{}, err
	}
	fw.res.Segments = s.seq
	w.files = &backup.Files{Count: fw.res.Files, Bytes: fw.res.Bytes, Stored: fw.res.Stored, StoredBytes: fw.res.StoredBytes}
	return fw.res, nil
}

type filesWriter struct {
	ctx context.Context
	w   *Writer
	tw  *tar.Writer
	buf []byte
	sum hash.Hash
	res FilesResult
}

func (fw *filesWriter) root(r Root) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(r.Dir.Fd()), &st); err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot read %s", r.Path).With(errcode.DetailPath, r.Path)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return errcode.New(errcode.CapabilityInvalid, "%s is not a folder", r.Path).With(errcode.DetailPath, r.Path)
	}
	rel := strings.TrimPrefix(r.Path, "/")
	if err := fw.dirEntry(rel, &st); err != nil {
		return err
	}
	return fw.dir(int(r.Dir.Fd()), rel)
}

// dir stores the entries of the folder open as fd, in name order.
func (fw *filesWriter) dir(fd int, rel string) error {
	// Readdirnames reads a duplicate, so that fd stays the caller's to close.
	dup, err := unix.Dup(fd)
	if err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot list /%s", rel).With(errcode.DetailPath, "/"+rel)
	}
	f := os.NewFile(uintptr(dup), rel)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot list /%s", rel).With(errcode.DetailPath, "/"+rel)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := fw.ctx.Err(); err != nil {
			return errcode.Wrap(err, errcode.CapabilityTimeout, "the run was stopped")
		}
		if err := fw.entry(fd, rel, name); err != nil {
			return err
		}
	}
	return nil
}

func (fw *filesWriter) entry(dirfd int, rel, name string) error {
	p := rel + "/" + name
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		fw.res.Vanished++
		return nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			fw.res.Vanished++
			return nil
		}
		defer unix.Close(fd)
		if err := unix.Fstat(fd, &st); err != nil {
			fw.res.Vanished++
			return nil
		}
		if err := fw.dirEntry(p, &st); err != nil {
			return err
		}
		return fw.dir(fd, p)
	case unix.S_IFREG:
		return fw.file(dirfd, name, p, &st)
	case unix.S_IFLNK:
		target, err := readlinkat(dirfd, name)
		if err != nil {
			fw.res.Vanished++
			return nil
		}
		fw.res.Symlinks++
		e := entryOf(p, backup.TypeSymlink, &st)
		e.Target = target
		fw.w.index.Entries = append(fw.w.index.Entries, e)
		if fw.unchanged(&e) {
			return nil
		}
		return fw.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: target}, &e)
	default:
		fw.res.Skipped++
		return nil
	}
}

func (fw *filesWriter) dirEntry(p string, st *unix.Stat_t) error {
	fw.res.Dirs++
	e := entryOf(p, backup.TypeDir, st)
	fw.w.index.Entries = append(fw.w.index.Entries, e)
	if fw.unchanged(&e) {
		return nil
	}
	return fw.header(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/"}, &e)
}

// unchanged reports whether e is in the parent's index as it is now, taking the parent's digest and
// run for a file. A full run has no parent: nothing is unchanged.
func (fw *filesWriter) unchanged(e *backup.Entry) bool {
	old, ok := fw.w.parent[e.Path]
	if !ok || old.Type != e.Type || old.Size != e.Size || old.MTimeNS != e.MTimeNS || old.CTimeNS != e.CTimeNS ||
		old.Ino != e.Ino || old.Dev != e.Dev || old.Mode != e.Mode || old.UID != e.UID || old.GID != e.GID || old.Target != e.Target {
		return false
	}
	e.SHA256, e.Run = old.SHA256, old.Run
	return true
}

// header writes e's tar header.
func (fw *filesWriter) header(h *tar.Header, e *backup.Entry) error {
	h.Mode = int64(e.Mode)
	h.Uid, h.Gid = int(e.UID), int(e.GID)
	// Whole seconds: the index keeps the nanoseconds, and a sub-second time would cost every entry a
	// pax header.
	h.ModTime = time.Unix(0, e.MTimeNS).Truncate(time.Second)
	if err := fw.tw.WriteHeader(h); err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot archive /%s", e.Path).With(errcode.DetailPath, "/"+e.Path)
	}
	return nil
}

// file stores one regular file. It is opened relative to its folder without following a link, and
// described by the descriptor it is read from.
func (fw *filesWriter) file(dirfd int, name, p string, lst *unix.Stat_t) error {
	e := entryOf(p, backup.TypeFile, lst)
	if fw.unchanged(&e) {
		fw.res.Files++
		fw.res.Bytes += e.Size
		fw.w.index.Entries = append(fw.w.index.Entries, e)
		return nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOATIME, 0)
	if errors.Is(err, unix.EPERM) {
		// O_NOATIME is only for the file's owner or a privileged process.
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		fw.res.Vanished++
		return nil
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		fw.res.Vanished++ // replaced by something else between the listing and the open
		return nil
	}
	e = entryOf(p, backup.TypeFile, &st)
	if err := fw.header(&tar.Header{Typeflag: tar.TypeReg, Name: p, Size: e.Size}, &e); err != nil {
		return err
	}
	fw.sum.Reset()
	n, err := io.CopyBuffer(io.MultiWriter(fw.tw, fw.sum), io.LimitReader(f, e.Size), fw.buf)
	if err != nil && fw.w.failed() != nil {
		return fw.w.failed()
	}
	if err != nil && fw.ctx.Err() != nil {
		return errcode.Wrap(fw.ctx.Err(), errcode.CapabilityTimeout, "the run was stopped")
	}
	if n < e.Size {
		// It shrank (or could not be read to its end): the header promised e.Size bytes.
		fw.res.Changed++
		if err := fw.pad(e.Size - n); err != nil {
			return err
		}
	} else if more, _ := f.Read(fw.buf[:1]); more > 0 {
		fw.res.Changed++ // it grew: the run holds the size it had when opened
	}
	e.SHA256, e.Run = hex.EncodeToString(fw.sum.Sum(nil)), fw.w.grant.Run
	fw.res.Files++
	fw.res.Bytes += e.Size
	fw.res.Stored++
	fw.res.StoredBytes += e.Size
	fw.w.index.Entries = append(fw.w.index.Entries, e)
	return nil
}

// pad writes n zero bytes into the file's entry and its digest.
func (fw *filesWriter) pad(n int64) error {
	clear(fw.buf)
	for n > 0 {
		k := min(n, int64(len(fw.buf)))
		fw.sum.Write(fw.buf[:k])
		if _, err := fw.tw.Write(fw.buf[:k]); err != nil {
			if ferr := fw.w.failed(); ferr != nil {
				return ferr
			}
			return errcode.Wrap(err, errcode.CapabilityFailed, "cannot archive a file")
		}
		n -= k
	}
	return nil
}

func entryOf(p, typ string, st *unix.Stat_t) backup.Entry {
	e := backup.Entry{Path: p, Type: typ, Mode: uint32(st.Mode) & 0o7777, UID: st.Uid, GID: st.Gid,
		MTimeNS: st.Mtim.Nano(), CTimeNS: st.Ctim.Nano(), Dev: uint64(st.Dev), Ino: st.Ino}
	if typ == backup.TypeFile {
		e.Size = st.Size
	}
	return e
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	if n >= len(buf) {
		return "", errors.New("link target too long")
	}
	return string(buf[:n]), nil
}
