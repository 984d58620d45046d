package caps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// digestLimit is the largest file fs.digest hashes: the declared max_bytes, or the artifact default,
// never above hardMaxArtifact.
func digestLimit(c manifest.Capability) int64 {
	n := c.MaxBytes
	if n <= 0 {
		n = defaultMaxArtifact
	}
	return min(n, hardMaxArtifact)
}

// fsDigest describes a path beneath a declared root without following a final link and hashes it
// when it is a regular file. A path that does not exist is an answer (Exists false), not an error.
func fsDigest(ctx context.Context, _ *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FSDigest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	r, err := open(c, req.Path, false)
	if errcode.Has(err, errcode.CapabilityNotFound) {
		return capv1.FileState{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.close()
	var st unix.Stat_t
	if err := unix.Fstat(r.fd, &st); err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	info := fileInfo(filepath.Base(req.Path), &st)
	out := capv1.FileState{Exists: true, Type: info.Type, Size: st.Size, Mode: info.Mode, UID: st.Uid, GID: st.Gid}
	if a, err := accountsFor(ctx); err == nil {
		out.Owner, out.Group = a.byUID[int(st.Uid)], a.byGID[int(st.Gid)]
	}
	if info.Type != capv1.TypeFile {
		return out, nil
	}
	if st.Size > digestLimit(c) {
		out.TooLarge = true
		return out, nil
	}
	fd, err := r.reopen(unix.O_RDONLY)
	if err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	f := os.NewFile(uintptr(fd), req.Path)
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, digestLimit(c)+1))
	if err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	if n > digestLimit(c) {
		out.TooLarge = true // it grew while it was read
		return out, nil
	}
	out.SHA256 = hex.EncodeToString(h.Sum(nil))
	return out, nil
}

// Caps of fs.diff: each side is read whole, and a diff longer than maxDiff is cut.
const (
	maxDiffInput = 1 << 20
	maxDiff      = 64 << 10
)

// fsDiff is a unified diff from the file at a path (nothing, when there is none) to a staged artifact.
func fsDiff(_ context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FSDiff
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if !cas.ValidDigest(req.SHA256) {
		return nil, invalid("sha256", "sha256 must be 64 lowercase hex digits")
	}
	store, err := stagedStore(w, c.Cap)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(store.Path(req.SHA256))
	if err != nil {
		return nil, errcode.New(errcode.CapabilityNotFound, "fs.diff: artifact %s is not staged: fetch it first", req.SHA256).With(errcode.DetailSHA256, req.SHA256)
	}
	var old []byte
	r, err := open(c, req.Path, false)
	switch {
	case errcode.Has(err, errcode.CapabilityNotFound):
	case err != nil:
		return nil, err
	default:
		defer r.close()
		var st unix.Stat_t
		if err := unix.Fstat(r.fd, &st); err != nil {
			return nil, fsError(c.Cap, req.Path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return capv1.FSDiffResult{Binary: true}, nil
		}
		if st.Size > maxDiffInput {
			return capv1.FSDiffResult{TooLarge: true}, nil
		}
		fd, err := r.reopen(unix.O_RDONLY)
		if err != nil {
			return nil, fsError(c.Cap, req.Path, err)
		}
		f := os.NewFile(uintptr(fd), req.Path)
		old, err = io.ReadAll(io.LimitReader(f, maxDiffInput+1))
		f.Close()
		if err != nil {
			return nil, fsError(c.Cap, req.Path, err)
		}
	}
	if fi.Size() > maxDiffInput || len(old) > maxDiffInput {
		return capv1.FSDiffResult{TooLarge: true}, nil
	}
	neu, err := store.Get(req.SHA256)
	if err != nil {
		return nil, errcode.New(errcode.FootprintDigestMismatch, "fs.diff: staged artifact %s was altered", req.SHA256).With(errcode.DetailSHA256, req.SHA256)
	}
	if !text(old) || !text(neu) {
		return capv1.FSDiffResult{Binary: true}, nil
	}
	d := unifiedDiff(req.Path, string(old), string(neu))
	out := capv1.FSDiffResult{Diff: d}
	if len(d) > maxDiff {
		cut := maxDiff
		for cut > 0 && !utf8.RuneStart(d[cut]) {
			cut--
		}
		out.Diff, out.Truncated = d[:cut], true
	}
	return out, nil
}

func text(b []byte) bool { return utf8.Valid(b) && !strings.ContainsRune(string(b), 0) }

// tempName is the temporary file fs.install writes for a target name: fixed per name, so a run killed
// mid-write leaves at most one beside each target, which the next install of that target replaces.
func tempName(name string) string {
	s := sha256.Sum256([]byte(name))
	return ".lexicon-" + hex.EncodeToString(s[:8]) + ".new"
}

// fsInstall makes a path the staged artifact with the given mode, owner and group. See capv1.FSInstall.
func fsInstall(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FSInstall
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if !cas.ValidDigest(req.SHA256) {
		return nil, invalid("sha256", "sha256 must be 64 lowercase hex digits")
	}
	if req.Mode&^0o777 != 0 {
		return nil, invalid("mode", "mode %o has bits beyond permissions; fs.install never writes setuid, setgid or sticky bits", req.Mode)
	}
	store, err := stagedStore(w, c.Cap)
	if err != nil {
		return nil, err
	}
	staged, err := os.Open(store.Path(req.SHA256))
	if err != nil {
		return nil, errcode.New(errcode.CapabilityNotFound, "fs.install: artifact %s is not staged: fetch it first", req.SHA256).With(errcode.DetailSHA256, req.SHA256)
	}
	defer staged.Close()
	sfi, err := staged.Stat()
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "fs.install: cannot read staged %s", req.SHA256)
	}
	fp := &footprint.Footprint{Schema: footprint.SchemaName, Files: []footprint.File{{Path: req.Path, SHA256: req.SHA256, Size: sfi.Size(),
		Mode: footprint.FormatMode(req.Mode), Owner: req.Owner, Group: req.Group}}}
	if err := footprint.Validate(fp); err != nil {
		return nil, err
	}
	if err := check(ctx, w, fp); err != nil {
		return nil, err
	}
	// The walk starts from the manifest's root, which must exist, making the folders beneath it that do
	// not; a link on the way is followed only while it stays beneath that root. Where the walk
	// actually led is then held to the policy's roots and the agent's folders again.
	root, _ := footprint.Root(c.Paths, req.Path)
	a, err := accountsFor(ctx)
	if err != nil {
		return nil, err
	}
	owner, ok := a.users[req.Owner]
	if !ok {
		return nil, errcode.New(errcode.CapabilityNotFound, "fs.install: user %s does not exist", req.Owner).With(errcode.DetailName, req.Owner)
	}
	group, ok := a.groups[req.Group]
	if !ok {
		return nil, errcode.New(errcode.CapabilityNotFound, "fs.install: group %s does not exist", req.Group).With(errcode.DetailName, req.Group)
	}
	dirfd, dirPath, err := ensureParent(c.Cap, root, req.Path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	name := filepath.Base(req.Path)
	target := filepath.Join(dirPath, name)
	if target != req.Path {
		led := &footprint.Footprint{Schema: footprint.SchemaName, Files: []footprint.File{fp.Files[0]}}
		led.Files[0].Path = target
		if err := check(ctx, w, led); err != nil {
			return nil, errcode.From(err, errcode.FootprintRefused).With(errcode.DetailPath, req.Path).
				With(errcode.DetailReason, req.Path+" leads through a link to "+target+", which the bounds refuse")
		}
	}
	out := capv1.FSInstallResult{Changed: []string{}}
	var old unix.Stat_t
	switch err := unix.Fstatat(dirfd, name, &old, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && old.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, denied(c.Cap, "%s exists and is not a regular file", req.Path).With(errcode.DetailPath, req.Path)
	case err == nil:
		sum, err := hashAt(dirfd, name)
		if err != nil {
			return nil, fsError(c.Cap, req.Path, err)
		}
		out.Previous = sum
		if sum == req.SHA256 {
			return fixAttrs(c.Cap, dirfd, name, req, &old, owner.uid, group.gid, out)
		}
	case err != unix.ENOENT:
		return nil, fsError(c.Cap, req.Path, err)
	}
	tmp := tempName(name)
	if err := unix.Unlinkat(dirfd, tmp, 0); err != nil && err != unix.ENOENT {
		return nil, fsError(c.Cap, req.Path, err)
	}
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
	werr := copyChecked(fd, staged, sfi.Size(), req.SHA256)
	if werr == nil {
		werr = unix.Fchown(fd, owner.uid, group.gid)
	}
	if werr == nil {
		werr = unix.Fchmod(fd, req.Mode)
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
		if errcode.Has(werr, errcode.FootprintDigestMismatch) {
			return nil, werr
		}
		return nil, fsError(c.Cap, req.Path, werr)
	}
	committed = true
	step("fs.install.renamed")
	if err := unix.Fsync(dirfd); err != nil {
		return nil, fsError(c.Cap, req.Path, err)
	}
	out.Changed = append(out.Changed, "content")
	return out, nil
}

// copyChecked copies the staged artifact into fd, hashing it again as it goes: the staged file is the
// agent's, but the bytes written must be the bytes the footprint names, whatever happened to it since
// it was fetched.
func copyChecked(fd int, staged *os.File, size int64, want string) error {
	h := sha256.New()
	buf := make([]byte, 256<<10)
	var done int64
	half := false
	for {
		n, err := staged.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if werr := writeAll(fd, buf[:n]); werr != nil {
				return werr
			}
			done += int64(n)
			if !half && done*2 >= size {
				half = true
				step("fs.install.half")
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return errcode.New(errcode.FootprintDigestMismatch, "staged artifact %s was altered (it hashes to %s): nothing was written", want, got).With(errcode.DetailSHA256, want)
	}
	return nil
}

func hashAt(dirfd int, name string) (string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// fixAttrs corrects the mode and ownership of a file whose content is already right.
func fixAttrs(cap string, dirfd int, name string, req capv1.FSInstall, old *unix.Stat_t, uid, gid int, out capv1.FSInstallResult) (any, error) {
	if old.Mode&0o7777 == req.Mode && int(old.Uid) == uid && int(old.Gid) == gid {
		return out, nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fsError(cap, req.Path, err)
	}
	defer unix.Close(fd)
	if int(old.Uid) != uid || int(old.Gid) != gid {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return nil, fsError(cap, req.Path, err)
		}
		if int(old.Uid) != uid {
			out.Changed = append(out.Changed, "owner")
		}
		if int(old.Gid) != gid {
			out.Changed = append(out.Changed, "group")
		}
	}
	// chown clears setuid and setgid; the mode is set after it, to what was asked.
	if old.Mode&0o7777 != req.Mode || len(out.Changed) > 0 {
		if err := unix.Fchmod(fd, req.Mode); err != nil {
			return nil, fsError(cap, req.Path, err)
		}
		if old.Mode&0o7777 != req.Mode {
			out.Changed = append(out.Changed, "mode")
		}
	}
	if err := unix.Fsync(fd); err != nil {
		return nil, fsError(cap, req.Path, err)
	}
	return out, nil
}

// ensureParent opens the folder that holds path, beneath root, making the folders that are missing
// (0755, root's). Existing folders are reached as fs.write reaches them (the root from "/" without
// links, its ancestors root's, links beneath it followed only while they stay beneath it); a folder it
// makes is made by name in the folder before it, opened without following links. It returns the
// folder's descriptor and the path the walk took to it.
func ensureParent(cap, root, path string) (int, string, error) {
	if path == root {
		return -1, "", denied(cap, "the root %s itself cannot be written", root).With(errcode.DetailPath, path)
	}
	parent := filepath.Dir(path)
	var missing []string
	for {
		r, err := resolve(cap, root, parent, true)
		if err == nil {
			dirfd, err := r.reopen(unix.O_RDONLY | unix.O_DIRECTORY)
			dirPath := r.path
			r.close()
			if err != nil {
				return -1, "", fsError(cap, path, err)
			}
			for i := len(missing) - 1; i >= 0; i-- {
				c := missing[i]
				if err := unix.Mkdirat(dirfd, c, 0o755); err != nil && err != unix.EEXIST {
					unix.Close(dirfd)
					return -1, "", fsError(cap, path, err)
				}
				next, err := unix.Openat(dirfd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				unix.Close(dirfd)
				if err != nil {
					return -1, "", fsError(cap, path, err)
				}
				dirfd, dirPath = next, filepath.Join(dirPath, c)
			}
			return dirfd, dirPath, nil
		}
		if !errcode.Has(err, errcode.CapabilityNotFound) || parent == root {
			return -1, "", err
		}
		missing = append(missing, filepath.Base(parent))
		parent = filepath.Dir(parent)
	}
}
