package archive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// VerifyResult sums up a verification.
type VerifyResult struct {
	Run   string   `json:"run"`
	Chain []string `json:"chain"`
	// Files and Bytes are the files whose content was read back and matched its digest.
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
	// Objects and ObjectBytes are the objects fetched and matched against their manifests: the last
	// run's index and dumps, and the files of every run the last index still needs.
	Objects     int      `json:"objects"`
	ObjectBytes int64    `json:"object_bytes"`
	Databases   []string `json:"databases"`
}

// DumpCheck restores a database's dump somewhere it can be thrown away, and says whether it did.
type DumpCheck func(ctx context.Context, database string, dump io.Reader) error

// Verify reads the whole chain back: every object of every files stream and of the last run's dumps,
// each checked against its manifest's size and sha256 and decrypted, every file of the last index
// found in the run its index names with the digest it names, and every dump handed to check.
func (r *Reader) Verify(ctx context.Context, check DumpCheck) (VerifyResult, error) {
	last := r.Last()
	res := VerifyResult{Run: last.Run, Chain: last.Chain}
	err := r.eachFile(ctx, "", func(e *backup.Entry, content io.Reader) error {
		if _, err := digestOf(e, content, io.Discard); err != nil {
			return err
		}
		res.Files++
		res.Bytes += e.Size
		return nil
	})
	if err != nil {
		return res, err
	}
	for _, d := range last.Databases {
		dump, err := r.Database(ctx, d.Name)
		if err != nil {
			return res, err
		}
		err = check(ctx, d.Name, dump)
		if cerr := dump.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			if errcode.Has(err, errcode.BackupVerifyFailed) {
				return res, err
			}
			return res, errcode.Wrap(err, errcode.BackupVerifyFailed, "the dump of %s does not restore: %s", d.Name, errcode.From(err, "").Message).
				With(errcode.DetailName, d.Name).With(errcode.DetailReason, "database")
		}
		res.Databases = append(res.Databases, d.Name)
	}
	res.Objects, res.ObjectBytes = int(r.fetched.Load()), r.fetchedBytes.Load()
	return res, nil
}

// digestOf copies a file's content to w and checks it against the index: its size and sha256.
func digestOf(e *backup.Entry, content io.Reader, w io.Writer) (hash.Hash, error) {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), content)
	if err != nil {
		return nil, err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != e.Size || sum != e.SHA256 {
		return nil, errcode.New(errcode.BackupVerifyFailed, "/%s holds %d bytes with sha256 %s; the index says %d bytes, %s", e.Path, n, sum, e.Size, e.SHA256).
			With(errcode.DetailPath, "/"+e.Path).With(errcode.DetailReason, "file")
	}
	return h, nil
}

// eachFile calls fn with every file of the last index beneath subtree ("" for all), reading each from
// the files stream of the run that holds it, runs in chain order, so that each file is read once.
// A file the index names that no stream holds is backup.verify_failed.
func (r *Reader) eachFile(ctx context.Context, subtree string, fn func(e *backup.Entry, content io.Reader) error) error {
	want := map[string]*backup.Entry{}
	for i := range r.index.Entries {
		e := &r.index.Entries[i]
		if e.Type == backup.TypeFile && inSubtree(subtree, e.Path) {
			want[e.Path] = e
		}
	}
	for _, rr := range r.runs {
		m := rr.m
		if len(m.Stream(backup.RoleFiles, "")) == 0 || !slices.ContainsFunc(r.index.Entries, func(e backup.Entry) bool { return e.Run == m.Run }) {
			continue
		}
		rc := r.stream(ctx, m, backup.RoleFiles, "")
		err := func() error {
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					if errcode.Code(err) != "" {
						return err
					}
					return errcode.Wrap(err, errcode.BackupVerifyFailed, "the files of %s are not a tar stream: %v", m.Run, err).
						With(errcode.DetailName, m.Run).With(errcode.DetailReason, "tar")
				}
				if h.Typeflag != tar.TypeReg {
					continue
				}
				e, ok := want[h.Name]
				if !ok || e.Run != m.Run {
					continue // a newer run holds it, or it is not asked for
				}
				if err := fn(e, tr); err != nil {
					return err
				}
				delete(want, h.Name)
			}
		}()
		rc.Close()
		if err != nil {
			return err
		}
	}
	for p, e := range want {
		return errcode.New(errcode.BackupVerifyFailed, "/%s is in the index but not in the files of run %s", p, e.Run).
			With(errcode.DetailPath, "/"+p).With(errcode.DetailReason, "missing")
	}
	return nil
}

func inSubtree(subtree, p string) bool {
	return subtree == "" || p == subtree || strings.HasPrefix(p, subtree+"/")
}

// RestoreOptions says where a restore writes.
type RestoreOptions struct {
	// Into is the folder restored into; it must be empty.
	Into *os.Root
	// Subtree, when set, restores the contents of that folder of the tree (srv/app, as the index
	// names it) into Into; otherwise the whole tree is restored under Into with its full paths.
	Subtree string
	// Owners restores files' owners (uid and gid); only root may.
	Owners bool
}

// RestoreResult sums up a restore.
type RestoreResult struct {
	Run      string `json:"run"`
	Files    int64  `json:"files"`
	Bytes    int64  `json:"bytes"`
	Dirs     int64  `json:"dirs"`
	Symlinks int64  `json:"symlinks"`
	// SetIDCleared counts files whose setuid or setgid bit was not restored: a restore never makes a
	// set-id program.
	SetIDCleared int64 `json:"setid_cleared"`
}

// RestoreFiles restores the last run's tree (or a subtree of it) into an empty folder: every file with
// the content its index names, checked against its digest as it is written, every folder and symlink,
// with their modes and times. Everything is written into a staging folder inside Into first and moved
// into place only once all of it is there and checked; on any error the staging folder is removed and
// Into is as it was.
func (r *Reader) RestoreFiles(ctx context.Context, opts RestoreOptions) (RestoreResult, error) {
	res := RestoreResult{Run: r.Last().Run}
	sub := opts.Subtree
	if sub != "" {
		e := r.index.Lookup()[sub]
		if !backup.ValidEntryPath(sub) || e == nil || e.Type != backup.TypeDir {
			return res, errcode.New(errcode.CapabilityNotFound, "run %s holds no folder /%s", res.Run, sub).With(errcode.DetailPath, "/"+sub)
		}
	}
	if err := emptyFolder(opts.Into); err != nil {
		return res, err
	}
	staging := stagingPrefix + res.Run
	if err := opts.Into.Mkdir(staging, 0o700); err != nil {
		return res, errcode.Wrap(err, errcode.CapabilityFailed, "cannot make the staging folder in %s", opts.Into.Name())
	}
	dest := func(p string) (string, bool) {
		switch {
		case sub == "":
			return staging + "/" + p, true
		case p == sub:
			return staging, false
		case strings.HasPrefix(p, sub+"/"):
			return staging + "/" + p[len(sub)+1:], true
		}
		return "", false
	}
	err := r.restore(ctx, opts, sub, dest, &res)
	if err == nil {
		err = moveInto(opts.Into, staging)
	}
	if err == nil && sub != "" {
		// The folder restored into takes the subtree's own mode, owner and time, as a whole-tree
		// restore gives them to every folder it makes.
		err = setDir(opts, ".", r.index.Lookup()[sub])
	}
	if err != nil {
		_ = opts.Into.RemoveAll(staging)
		return RestoreResult{Run: res.Run}, err
	}
	return res, nil
}

func (r *Reader) restore(ctx context.Context, opts RestoreOptions, sub string, dest func(string) (string, bool), res *RestoreResult) error {
	root := opts.Into
	failed := func(err error, p string) error {
		if errcode.Code(err) != "" {
			return err
		}
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot restore /%s", p).With(errcode.DetailPath, "/"+p)
	}
	var dirs []*backup.Entry
	for i := range r.index.Entries {
		e := &r.index.Entries[i]
		if d, ok := dest(e.Path); ok && e.Type == backup.TypeDir {
			if err := root.MkdirAll(d, 0o700); err != nil {
				return failed(err, e.Path)
			}
			dirs = append(dirs, e)
		}
	}
	err := r.eachFile(ctx, sub, func(e *backup.Entry, content io.Reader) error {
		d, _ := dest(e.Path)
		if err := root.MkdirAll(path.Dir(d), 0o700); err != nil {
			return failed(err, e.Path)
		}
		f, err := root.OpenFile(d, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return failed(err, e.Path)
		}
		_, err = digestOf(e, content, f)
		mode := e.Mode &^ 0o6000
		if mode != e.Mode {
			res.SetIDCleared++
		}
		if err == nil && opts.Owners {
			err = f.Chown(int(e.UID), int(e.GID))
		}
		if err == nil {
			err = f.Chmod(fs.FileMode(mode)&fs.ModePerm | stickyOf(mode))
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = root.Chtimes(d, time.Time{}, time.Unix(0, e.MTimeNS))
		}
		if err != nil {
			return failed(err, e.Path)
		}
		res.Files++
		res.Bytes += e.Size
		return nil
	})
	if err != nil {
		return err
	}
	for i := range r.index.Entries {
		e := &r.index.Entries[i]
		d, ok := dest(e.Path)
		if !ok || e.Type != backup.TypeSymlink {
			continue
		}
		if err := root.Symlink(e.Target, d); err != nil {
			return failed(err, e.Path)
		}
		if opts.Owners {
			if err := root.Lchown(d, int(e.UID), int(e.GID)); err != nil {
				return failed(err, e.Path)
			}
		}
		res.Symlinks++
	}
	// Folders last, deepest first: writing into a folder changes its time, and a read-only folder
	// would refuse what goes in it.
	for _, e := range slices.Backward(dirs) {
		d, _ := dest(e.Path)
		if err := setDir(opts, d, e); err != nil {
			return failed(err, e.Path)
		}
		res.Dirs++
	}
	return nil
}

// setDir gives the folder d the owner, mode and time of e.
func setDir(opts RestoreOptions, d string, e *backup.Entry) error {
	var err error
	if opts.Owners {
		err = opts.Into.Lchown(d, int(e.UID), int(e.GID))
	}
	if err == nil {
		err = opts.Into.Chmod(d, fs.FileMode(e.Mode)&fs.ModePerm|stickyOf(e.Mode)|setgidOf(e.Mode))
	}
	if err == nil {
		err = opts.Into.Chtimes(d, time.Time{}, time.Unix(0, e.MTimeNS))
	}
	return err
}

func stickyOf(mode uint32) fs.FileMode {
	if mode&0o1000 != 0 {
		return fs.ModeSticky
	}
	return 0
}

func setgidOf(mode uint32) fs.FileMode {
	if mode&0o2000 != 0 {
		return fs.ModeSetgid
	}
	return 0
}

// stagingPrefix names a restore's staging folder inside the folder restored into.
const stagingPrefix = ".lexicon-restore-"

// emptyFolder refuses a folder that holds anything: a restore never mixes with what is there. The
// staging folder of a restore that was killed is all a folder may hold; it is removed first, as the
// restore that made it would have on an error.
func emptyFolder(root *os.Root) error {
	f, err := root.Open(".")
	if err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot read %s", root.Name())
	}
	all, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot read %s", root.Name())
	}
	var names []string
	for _, n := range all {
		if strings.HasPrefix(n, stagingPrefix) {
			if err := root.RemoveAll(n); err != nil {
				return errcode.Wrap(err, errcode.CapabilityFailed, "cannot remove %s, left by a restore that was stopped", n)
			}
			continue
		}
		names = append(names, n)
	}
	if len(names) > 0 {
		return errcode.New(errcode.BackupRestoreTargetNotEmpty, "%s is not empty: a restore goes only into an empty or new folder", root.Name()).
			With(errcode.DetailPath, root.Name())
	}
	return nil
}

// moveInto moves what the staging folder holds into its parent, the restore's folder, and removes it.
func moveInto(root *os.Root, staging string) error {
	f, err := root.Open(staging)
	if err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot read the staging folder")
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot read the staging folder")
	}
	for i, n := range names {
		if err := root.Rename(staging+"/"+n, n); err != nil {
			// Put back what moved, so that the caller's removal of the staging folder leaves the
			// folder as it was.
			for _, m := range names[:i] {
				_ = root.Rename(m, staging+"/"+m)
			}
			return errcode.Wrap(err, errcode.CapabilityFailed, "cannot move %s into place", n)
		}
	}
	if err := root.Remove(staging); err != nil {
		return errcode.Wrap(err, errcode.CapabilityFailed, "cannot remove the staging folder")
	}
	return nil
}
