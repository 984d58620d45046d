package caps

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/archive"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// openChain opens the chain of runs the invocation's read grant names, with the node's own key.
func openChain(ctx context.Context, d *Dispatcher, env *BackupEnv, cap string) (*archive.Reader, error) {
	g := d.grant
	if g == nil || len(g.Runs) == 0 {
		return nil, errcode.New(errcode.BackupGrantMissing, "%s: the job carries no read grant: only the plane hands one, for a verify or restore job", cap)
	}
	id, err := backup.NodeKey(env.nodeKeyFile(), false, time.Now())
	if err != nil {
		return nil, err
	}
	return archive.Open(ctx, env.client, g, id, time.Now())
}

func backupVerify(ctx context.Context, d *Dispatcher, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.BackupVerify
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	env, err := backupEnv(d.w, c.Cap)
	if err != nil {
		return nil, err
	}
	r, err := openChain(ctx, d, env, c.Cap)
	if err != nil {
		return nil, err
	}
	// A dump is good when it restores, whole, into a scratch database that is dropped after.
	check := func(ctx context.Context, database string, dump io.Reader) error {
		if err := allowDatabase(env, c.Cap, database); err != nil {
			return err
		}
		return pgVerify(ctx, env.Policy.Postgres, d.grant.Node, database, dump)
	}
	res, err := r.Verify(ctx, check)
	if err != nil {
		return nil, err
	}
	return capv1.BackupVerifyResult(res), nil
}

func backupRestore(ctx context.Context, d *Dispatcher, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.BackupRestore
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	env, err := backupEnv(d.w, c.Cap)
	if err != nil {
		return nil, err
	}
	switch {
	case (req.Into == "") == (req.Database == ""):
		return nil, invalid("into", "a restore is of files (into) or of a database (database), one of them")
	case req.Database != "":
		return restoreDatabase(ctx, d, env, c, req)
	}
	if _, err := within(c.Cap, c.Paths, req.Into); err != nil {
		return nil, err
	}
	if !env.Policy.AllowsRestore(req.Into) {
		return nil, errcode.New(errcode.BackupPathRefused, "backup.restore: %s is not beneath a folder this node's policy lets a restore write into", req.Into).
			With(errcode.DetailPath, req.Into)
	}
	sub := ""
	if req.Path != "" {
		if !backup.ValidRoot(req.Path) {
			return nil, invalid("path", "path %q must be an absolute clean folder below /", req.Path)
		}
		sub = strings.TrimPrefix(req.Path, "/")
	}
	r, err := openChain(ctx, d, env, c.Cap)
	if err != nil {
		return nil, err
	}
	into, made, err := openInto(c.Cap, req.Into)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", into.Fd()))
	if err == nil {
		defer root.Close()
	}
	into.Close()
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "backup.restore: cannot open %s", req.Into).With(errcode.DetailPath, req.Into)
	}
	res, err := r.RestoreFiles(ctx, archive.RestoreOptions{Into: root, Subtree: sub, Owners: os.Geteuid() == 0})
	if err != nil {
		if made != nil {
			made() // the folder the restore made goes too: nothing is left of it
		}
		return nil, err
	}
	return capv1.BackupRestoreResult{Run: res.Run, Files: res.Files, Bytes: res.Bytes, Dirs: res.Dirs, Symlinks: res.Symlinks,
		SetIDCleared: res.SetIDCleared}, nil
}

// openInto opens the folder a restore writes into, as fs.write reaches a root: from "/" without a
// symlink, through folders only root can change. A folder that does not exist is made (its parent must
// exist); made then removes it again.
func openInto(cap, p string) (*os.File, func(), error) {
	var made func()
	fd, err := openRoot(cap, p, true)
	if errcode.Has(err, errcode.CapabilityNotFound) {
		parent := filepath.Dir(p)
		pfd, perr := openRoot(cap, parent, true)
		if perr != nil {
			return nil, nil, perr
		}
		if err := safeAncestor(cap, p, parent, pfd); err != nil {
			unix.Close(pfd)
			return nil, nil, err
		}
		name := filepath.Base(p)
		if err := unix.Mkdirat(pfd, name, 0o700); err != nil {
			unix.Close(pfd)
			return nil, nil, fsError(cap, p, err)
		}
		made = func() { _ = unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR); unix.Close(pfd) }
		fd, err = openRoot(cap, p, true)
		if err != nil {
			made()
			return nil, nil, err
		}
	}
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(fd)
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if made != nil {
			made()
		}
		return nil, nil, fsError(cap, p, err)
	}
	return os.NewFile(uintptr(dfd), p), made, nil
}

func restoreDatabase(ctx context.Context, d *Dispatcher, env *BackupEnv, c manifest.Capability, req capv1.BackupRestore) (any, error) {
	if req.Path != "" {
		return nil, invalid("path", "path goes with into, a restore of files")
	}
	into := req.IntoDatabase
	if into == "" {
		into = req.Database
	}
	if err := allowDatabase(env, c.Cap, into); err != nil {
		return nil, err
	}
	r, err := openChain(ctx, d, env, c.Cap)
	if err != nil {
		return nil, err
	}
	dump, err := r.Database(ctx, req.Database)
	if err != nil {
		return nil, err
	}
	defer dump.Close()
	counted := &countingReader{r: dump}
	if err := pgRestoreNew(ctx, env.Policy.Postgres, d.grant.Node, into, counted); err != nil {
		return nil, err
	}
	return capv1.BackupRestoreResult{Run: r.Last().Run, Database: req.Database, IntoDatabase: into, DumpBytes: counted.n}, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
