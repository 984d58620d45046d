package caps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/archive"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// BackupEnv is what the node gives the backup capabilities: its owner's policy and the folder where
// the host keeps the node's backup key and the index of its last run.
type BackupEnv struct {
	// Policy is the backup section of the node's policy; nil answers backup.not_configured.
	Policy *backup.Policy
	// Dir holds node.key (the node's age key, 0600, made at its first backup) and index/, the index of
	// the last run committed to each target, which the next incremental run compares the tree with.
	Dir string
	// Segment and Parallel size the uploads (archive's defaults when zero).
	Segment, Parallel int

	clientOnce sync.Once
	client     *archive.Client
}

// nodeKeyFile is the node's backup key beneath BackupEnv.Dir.
func (b *BackupEnv) nodeKeyFile() string { return filepath.Join(b.Dir, "node.key") }

// backupHandler answers a backup capability: it needs the invocation's grant and run.
type backupHandler func(ctx context.Context, d *Dispatcher, c manifest.Capability, req []byte) (any, error)

var backupHandlers = map[string]backupHandler{
	capv1.CapBackupBegin:    backupBegin,
	capv1.CapBackupPaths:    backupPaths,
	capv1.CapBackupDatabase: backupDatabase,
	capv1.CapBackupCommit:   backupCommit,
	capv1.CapBackupVerify:   backupVerify,
	capv1.CapBackupRestore:  backupRestore,
}

// bind makes a backup handler an ordinary one for this invocation.
func (d *Dispatcher) bind(h backupHandler) handler {
	return func(ctx context.Context, _ *Word, c manifest.Capability, req []byte) (any, error) {
		d.backupMu.Lock()
		defer d.backupMu.Unlock()
		return h(ctx, d, c, req)
	}
}

// backupRun is the run an invocation began.
type backupRun struct {
	w         *archive.Writer
	cache     string // the index cache of the run's target
	committed bool
}

// End releases what the invocation holds: a run begun and not committed stops its uploads, and is
// never a restore point.
func (d *Dispatcher) End() {
	d.backupMu.Lock()
	defer d.backupMu.Unlock()
	if d.backup != nil && !d.backup.committed {
		d.backup.w.Close()
	}
}

// backupEnv is the node's backup environment, or backup.not_configured.
func backupEnv(w *Word, cap string) (*BackupEnv, error) {
	b := w.env.Backup
	if b == nil || b.Policy == nil || b.Dir == "" {
		return nil, errcode.New(errcode.BackupNotConfigured, "%s: this node's policy has no backup section", cap).With(errcode.DetailCap, cap)
	}
	b.clientOnce.Do(func() { b.client = archive.NewClient(w.env.RootCAs) })
	return b, nil
}

// run is the invocation's run, or capability.invalid when none was begun.
func (d *Dispatcher) run(cap string) (*backupRun, error) {
	if d.backup == nil {
		return nil, invalid("cap", "%s: no run was begun (backup.begin comes first)", cap)
	}
	if d.backup.committed {
		return nil, invalid("cap", "%s: the run is committed", cap)
	}
	if err := d.backup.w.Err(); err != nil {
		return nil, errcode.Wrap(err, errcode.Code(err), "%s: the run failed earlier (%s), so it cannot go on", cap, errcode.Code(err))
	}
	return d.backup, nil
}

// failRun fails the invocation's run with err, so it can never commit, and returns err.
func (d *Dispatcher) failRun(err error) error {
	if err != nil && d.backup != nil && !d.backup.committed {
		d.backup.w.Fail(err)
	}
	return err
}

func backupBegin(ctx context.Context, d *Dispatcher, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.BackupBegin
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.Mode != "" && req.Mode != capv1.BackupFull && req.Mode != capv1.BackupIncremental {
		return nil, invalid("mode", "mode %q is not full or incremental", req.Mode)
	}
	env, err := backupEnv(d.w, c.Cap)
	if err != nil {
		return nil, err
	}
	if d.backup != nil {
		return nil, invalid("cap", "backup.begin: the invocation already began run %s", d.backup.w.Run())
	}
	g := d.grant
	if g == nil || g.Run == "" {
		return nil, errcode.New(errcode.BackupGrantMissing, "backup.begin: the job carries no write grant: only the plane hands one, for a backup job")
	}
	if err := os.MkdirAll(env.Dir, 0o700); err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "backup.begin: cannot make the node's backup folder")
	}
	id, err := backup.NodeKey(env.nodeKeyFile(), true, time.Now())
	if err != nil {
		return nil, err
	}
	cache := indexCache(env, g)
	parent, reason := readIndexCache(cache, g)
	incremental := req.Mode != capv1.BackupFull
	w, err := archive.NewWriter(archive.WriterConfig{Grant: g, NodeKey: id, Parent: parent, Incremental: incremental,
		Client: env.client, Segment: env.Segment, Parallel: env.Parallel})
	if err != nil {
		return nil, err
	}
	d.backup = &backupRun{w: w, cache: cache}
	res := capv1.BackupBeginResult{Run: w.Run(), Kind: w.Kind(), Chain: w.Chain(), Recipient: w.Recipient()}
	if incremental && w.Kind() == backup.KindFull {
		res.Reason = reason
	}
	return res, nil
}

// indexCache is where the index of the last run committed to g's target by this node is kept: one
// file per target folder, named for it.
func indexCache(env *BackupEnv, g *channel.BackupGrant) string {
	folder := strings.TrimSuffix(g.Prefix, g.Run+"/")
	sum := sha256.Sum256([]byte(g.Target + "\x00" + folder))
	return filepath.Join(env.Dir, "index", hex.EncodeToString(sum[:16])+".jsonl")
}

// readIndexCache returns the cached index when it is the grant's parent run, or why not.
func readIndexCache(path string, g *channel.BackupGrant) (*backup.Index, string) {
	if g.Parent == "" {
		return nil, "the plane names no parent run: this target has no run of this node yet"
	}
	data, err := keys.ReadPrivate(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "this node holds no index of a run to this target"
	}
	if err != nil {
		return nil, "this node's index of its last run cannot be read: " + errcode.From(err, "").Message
	}
	x, err := backup.ReadIndex(bytes.NewReader(data))
	if err != nil {
		return nil, "this node's index of its last run is damaged: " + errcode.From(err, "").Message
	}
	if x.Header.Run != g.Parent {
		return nil, "this node's last run to this target is " + x.Header.Run + ", not the parent " + g.Parent + " the plane names"
	}
	return x, ""
}

// writeIndexCache keeps the index of the run just committed for the next incremental one.
func writeIndexCache(path string, x *backup.Index) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	var b bytes.Buffer
	if _, err := x.WriteTo(&b); err != nil {
		return err
	}
	return keys.ReplaceFile(path, b.Bytes(), 0o600)
}

func backupPaths(ctx context.Context, d *Dispatcher, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.BackupPaths
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	env, err := backupEnv(d.w, c.Cap)
	if err != nil {
		return nil, err
	}
	run, err := d.run(c.Cap)
	if err != nil {
		return nil, err
	}
	if len(req.Paths) == 0 {
		return nil, d.failRun(invalid("paths", "backup.paths needs at least one folder"))
	}
	var roots []archive.Root
	defer func() {
		for _, r := range roots {
			r.Dir.Close()
		}
	}()
	for _, p := range req.Paths {
		if _, err := within(c.Cap, c.Paths, p); err != nil {
			return nil, d.failRun(err)
		}
		if !env.Policy.AllowsPath(p) {
			return nil, d.failRun(errcode.New(errcode.BackupPathRefused, "backup.paths: %s is not beneath a folder this node's policy lets be backed up", p).
				With(errcode.DetailPath, p))
		}
		dir, err := openDir(c.Cap, p)
		if err != nil {
			return nil, d.failRun(err)
		}
		roots = append(roots, archive.Root{Path: p, Dir: dir})
	}
	res, err := run.w.Files(ctx, roots)
	if err != nil {
		return nil, d.failRun(err)
	}
	return capv1.BackupPathsResult(res), nil
}

// openDir opens a folder to read by a walk from "/" that follows no symlink (openRoot).
func openDir(cap, p string) (*os.File, error) {
	fd, err := openRoot(cap, p, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fsError(cap, p, err)
	}
	return os.NewFile(uintptr(dfd), p), nil
}

func backupDatabase(ctx context.Context, d *Dispatcher, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.BackupDatabase
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	env, err := backupEnv(d.w, c.Cap)
	if err != nil {
		return nil, err
	}
	run, err := d.run(c.Cap)
	if err != nil {
		return nil, err
	}
	if err := allowDatabase(env, c.Cap, req.Database); err != nil {
		return nil, d.failRun(err)
	}
	var res archive.DatabaseResult
	err = pgDump(ctx, env.Policy.Postgres, req.Database, func(dump *os.File) error {
		var err error
		res, err = run.w.Database(ctx, req.Database, dump)
		return err
	})
	if err != nil {
		return nil, d.failRun(err)
	}
	return capv1.BackupDatabaseResult{Database: res.Name, Bytes: res.Bytes, Segments: res.Segments}, nil
}

// allowDatabase refuses a database the node's policy does not name.
func allowDatabase(env *BackupEnv, cap, name string) error {
	if !backup.ValidDatabaseName(name) {
		return invalid("database", "%q is not a database name", name)
	}
	if !env.Policy.AllowsDatabase(name) || env.Policy.Postgres == nil {
		return errcode.New(errcode.BackupDatabaseRefused, "%s: this node's policy does not name the database %s", cap, name).With(errcode.DetailName, name)
	}
	return nil
}

func backupCommit(ctx context.Context, d *Dispatcher, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.BackupCommit
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if _, err := backupEnv(d.w, c.Cap); err != nil {
		return nil, err
	}
	run, err := d.run(c.Cap)
	if err != nil {
		return nil, err
	}
	m, x, err := run.w.Commit(ctx)
	if err != nil {
		return nil, d.failRun(err)
	}
	run.committed = true
	res := capv1.BackupCommitResult{Run: m.Run, Kind: m.Kind, Chain: m.Chain, Manifest: d.grant.Manifest.Key, Objects: len(m.Objects),
		Bytes: m.Size(), Files: m.Files.Count, FileBytes: m.Files.Bytes, Stored: m.Files.Stored, StoredBytes: m.Files.StoredBytes, Databases: []string{}}
	for _, db := range m.Databases {
		res.Databases = append(res.Databases, db.Name)
	}
	// The run is a restore point whatever happens to the cache; without it the next run is a full one.
	if err := writeIndexCache(run.cache, x); err != nil {
		res.Note = "the run's index could not be kept on this node, so the next run will be a full one: " + err.Error()
	}
	return res, nil
}
