package archive_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/archive"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// fixture is a target on a real versitygw, a recovery key and a node key.
type fixture struct {
	srv      *backuptest.Server
	target   presign.Target
	signer   *presign.Signer
	recovery *age.X25519Identity
	node     *age.X25519Identity
	client   *archive.Client
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := backuptest.Start(t)
	target := srv.Target(srv.Bucket(t, "backups"), "fleet")
	signer, err := presign.New(target)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := age.GenerateX25519Identity()
	node, _ := age.GenerateX25519Identity()
	return &fixture{srv: srv, target: target, signer: signer, recovery: rec, node: node, client: archive.NewClient(nil)}
}

func (f *fixture) writeGrant(t *testing.T, parent string, objects int) *channel.BackupGrant {
	t.Helper()
	g, err := f.signer.WriteGrant(context.Background(), presign.WriteRequest{Node: "node-1", Parent: parent,
		Recipients: []string{f.recovery.Recipient().String()}, Objects: objects})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// tree makes a folder with files of several sizes, a nested folder, an empty file and a symlink.
func tree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	must(t, os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o750))
	write(t, filepath.Join(dir, "small.txt"), []byte("hello\n"))
	write(t, filepath.Join(dir, "empty"), nil)
	write(t, filepath.Join(dir, "sub", "big.bin"), random(t, 3<<20+123))
	write(t, filepath.Join(dir, "sub", "deeper", "chunk.bin"), random(t, 64<<10))
	must(t, os.Symlink("small.txt", filepath.Join(dir, "link")))
	must(t, os.Chmod(filepath.Join(dir, "small.txt"), 0o640))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	must(t, os.WriteFile(p, b, 0o644))
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func openRoot(t *testing.T, p string) archive.Root {
	t.Helper()
	d, err := os.Open(p)
	must(t, err)
	t.Cleanup(func() { d.Close() })
	return archive.Root{Path: p, Dir: d}
}

// backupRun writes one run of dir (and a database stream) and returns its manifest and index.
func (f *fixture) backupRun(t *testing.T, dir string, parent *backup.Index, dump []byte) (*backup.Manifest, *backup.Index) {
	t.Helper()
	ctx := context.Background()
	pr := ""
	if parent != nil {
		pr = parent.Header.Run
	}
	w, err := archive.NewWriter(archive.WriterConfig{Grant: f.writeGrant(t, pr, 64), NodeKey: f.node, Parent: parent,
		Incremental: parent != nil, Client: f.client, Segment: 1 << 20, Parallel: 2})
	must(t, err)
	defer w.Close()
	if _, err := w.Files(ctx, []archive.Root{openRoot(t, dir)}); err != nil {
		t.Fatalf("files: %v", err)
	}
	if dump != nil {
		if _, err := w.Database(ctx, "app", bytes.NewReader(dump)); err != nil {
			t.Fatalf("database: %v", err)
		}
	}
	m, x, err := w.Commit(ctx)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return m, x
}

// TestRoundTrip: a full run and an incremental one of a tree and a dump go to versitygw and come back
// whole: verified, and restored byte for byte with modes, times and symlinks; the dump is the dump.
func TestRoundTrip(t *testing.T) {
	f := newFixture(t)
	dir := tree(t)
	dump := random(t, 2<<20+7)
	full, x1 := f.backupRun(t, dir, nil, dump)
	if full.Kind != backup.KindFull || full.Files.Stored != 4 {
		t.Fatalf("first run: kind %s, stored %d files", full.Kind, full.Files.Stored)
	}

	// Change one file, add one, remove one: the next run stores only the two.
	write(t, filepath.Join(dir, "small.txt"), []byte("hello again\n"))
	write(t, filepath.Join(dir, "sub", "new.txt"), []byte("new"))
	must(t, os.Remove(filepath.Join(dir, "sub", "deeper", "chunk.bin")))
	inc, _ := f.backupRun(t, dir, x1, dump[:1000])
	if inc.Kind != backup.KindIncremental || inc.Files.Stored != 2 || inc.Parent() != full.Run {
		t.Fatalf("second run: kind %s, stored %d, parent %s", inc.Kind, inc.Files.Stored, inc.Parent())
	}

	ctx := context.Background()
	chain := f.srv.ReadGrant(t, f.target, "node-1", "")
	r, err := archive.Open(ctx, f.client, chain.Grant, f.node, time.Now())
	must(t, err)
	res, err := r.Verify(ctx, func(_ context.Context, db string, d io.Reader) error {
		got, err := io.ReadAll(d)
		if err != nil || db != "app" || !bytes.Equal(got, dump[:1000]) {
			t.Errorf("dump of %s: %d bytes, %v", db, len(got), err)
		}
		return err
	})
	if err != nil || res.Files != 4 {
		t.Fatalf("verify: %+v %v", res, err)
	}

	into := filepath.Join(t.TempDir(), "restored")
	must(t, os.Mkdir(into, 0o755))
	root, err := os.OpenRoot(into)
	must(t, err)
	defer root.Close()
	sub := strings.TrimPrefix(dir, "/")
	if _, err := r.RestoreFiles(ctx, archive.RestoreOptions{Into: root, Subtree: sub, Owners: os.Geteuid() == 0}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	sameTree(t, dir, into)

	// The recovery key reads the same chain: no node key needed.
	r2, err := archive.Open(ctx, f.client, chain.Grant, f.recovery, time.Now())
	must(t, err)
	if _, err := r2.Verify(ctx, func(context.Context, string, io.Reader) error { return nil }); err != nil {
		t.Fatalf("verify with the recovery key: %v", err)
	}
}

// sameTree compares two trees: names, types, content, permission bits, modification times, links.
func sameTree(t *testing.T, want, got string) {
	t.Helper()
	seen := 0
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		must(t, err)
		rel, _ := filepath.Rel(want, p)
		q := filepath.Join(got, rel)
		wi, _ := os.Lstat(p)
		gi, err := os.Lstat(q)
		if err != nil {
			t.Errorf("%s: missing after restore", rel)
			return nil
		}
		seen++
		if wi.Mode() != gi.Mode() {
			t.Errorf("%s: mode %v, want %v", rel, gi.Mode(), wi.Mode())
		}
		if rel != "." && !wi.IsDir() && !wi.ModTime().Equal(gi.ModTime()) && wi.Mode().Type() != fs.ModeSymlink {
			t.Errorf("%s: mtime %v, want %v", rel, gi.ModTime(), wi.ModTime())
		}
		switch {
		case wi.Mode().IsRegular():
			a, _ := os.ReadFile(p)
			b, _ := os.ReadFile(q)
			if !bytes.Equal(a, b) {
				t.Errorf("%s: content differs", rel)
			}
		case wi.Mode().Type() == fs.ModeSymlink:
			a, _ := os.Readlink(p)
			b, _ := os.Readlink(q)
			if a != b {
				t.Errorf("%s: link to %q, want %q", rel, b, a)
			}
		}
		return nil
	})
	must(t, err)
	n := 0
	_ = filepath.WalkDir(got, func(string, fs.DirEntry, error) error { n++; return nil })
	if n != seen {
		t.Errorf("restored tree has %d entries, the original %d", n, seen)
	}
}

// TestWriteGrantRules: a run never writes outside its grant. A key that exists is refused by the
// bucket and the run fails with backup.object_exists; a grant with too few keys fails with
// backup.grant_exhausted; neither writes a manifest.
func TestWriteGrantRules(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dir := tree(t)

	g := f.writeGrant(t, "", 3)
	w, err := archive.NewWriter(archive.WriterConfig{Grant: g, NodeKey: f.node, Client: f.client, Segment: 1 << 20})
	must(t, err)
	_, err = w.Files(ctx, []archive.Root{openRoot(t, dir)})
	if !errcode.Has(err, errcode.BackupGrantExhausted) {
		t.Fatalf("a 3 MiB tree in 1 MiB segments with 3 keys: %v", err)
	}
	w.Close()

	// Someone wrote the run's first key before the node: the node's PUT is refused, nothing replaced.
	// The refusal's reason reaches the node because a run's first object is small.
	g = f.writeGrant(t, "", 64)
	if _, err := f.srv.Client(t).PutObject(ctx, putInput(f.target.Bucket, g.Objects[0].Key, "squatter")); err != nil {
		t.Fatal(err)
	}
	w, err = archive.NewWriter(archive.WriterConfig{Grant: g, NodeKey: f.node, Client: f.client, Segment: 1 << 20})
	must(t, err)
	_, err = w.Files(ctx, []archive.Root{openRoot(t, dir)})
	if !errcode.Has(err, errcode.BackupObjectExists) {
		t.Fatalf("an existing key: %v", err)
	}
	w.Close()
	if got := string(f.srv.Object(t, f.target.Bucket, g.Objects[0].Key)); got != "squatter" {
		t.Fatalf("the existing object was replaced: %q", got)
	}
	for _, k := range f.srv.Keys(t, f.target.Bucket, "") {
		if strings.HasSuffix(k, backup.ManifestName) {
			t.Fatalf("a failed run wrote a manifest: %s", k)
		}
	}
}

func putInput(bucket, key, body string) *s3.PutObjectInput {
	return &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)}
}
