package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// backupBed is a node with a backup policy, a real versitygw target and a real PostgreSQL database.
type backupBed struct {
	srv      *backuptest.Server
	target   presign.Target
	signer   *presign.Signer
	recovery *age.X25519Identity
	pg       *backup.Postgres
	db       string
	data     string // the folder backed up
	restore  string // the folder restores may write beneath
	policy   *backup.Policy
	keyDir   string
}

func newBackupBed(t *testing.T) *backupBed {
	t.Helper()
	b := &backupBed{srv: backuptest.Start(t), pg: backuptest.Postgres(t), keyDir: filepath.Join(t.TempDir(), "backup")}
	b.target = b.srv.Target(b.srv.Bucket(t, "backups"), "fleet")
	var err error
	if b.signer, err = presign.New(b.target); err != nil {
		t.Fatal(err)
	}
	b.recovery, _ = age.GenerateX25519Identity()
	b.db = backuptest.Database(t, b.pg)
	if out, err := backuptest.Psql(b.pg, b.db, `CREATE TABLE t (id int PRIMARY KEY, v text);
		INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 500) g;`); err != nil {
		t.Fatalf("seed: %v\n%s", err, out)
	}
	b.data = filepath.Join(t.TempDir(), "data")
	writeFile(t, filepath.Join(b.data, "a.txt"), []byte("alpha\n"), 0o644)
	writeFile(t, filepath.Join(b.data, "sub", "b.bin"), bytes.Repeat([]byte{7}, 300<<10), 0o600)
	b.restore = testkit.SafeDir(t)
	b.policy = &backup.Policy{Paths: []string{b.data}, RestorePaths: []string{b.restore}, Databases: []string{b.db, b.db + "_restored", "nosuchdb"}, Postgres: b.pg}
	return b
}

func (b *backupBed) host(t *testing.T) *wasm.Host {
	return newHost(t, cached(wasm.Config{Backup: &wasm.BackupConfig{Policy: b.policy, Dir: b.keyDir, Segment: 128 << 10}}))
}

func (b *backupBed) writeGrant(t *testing.T, parent string) *channel.BackupGrant {
	t.Helper()
	g, err := b.signer.WriteGrant(context.Background(), presign.WriteRequest{Node: "node-1", Parent: parent,
		Recipients: []string{b.recovery.Recipient().String()}, Objects: 64})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// backupProber is the probe word declaring the backup capabilities, with time for a real run.
func backupProber(t *testing.T, h *wasm.Host, class string, paths []string) *prober {
	t.Helper()
	module, digest := testWord(t, "probe")
	caps := []map[string]any{{"cap": "backup.begin"}, {"cap": "backup.paths", "paths": paths}, {"cap": "backup.database"},
		{"cap": "backup.commit"}, {"cap": "backup.verify"}}
	if class == "destructive" {
		caps = append(caps, map[string]any{"cap": "backup.restore", "paths": paths})
	}
	extra := map[string]any{"class": class, "capabilities": caps,
		"limits": map[string]any{"output_bytes": 4 << 20, "wall_time_ms": 300000}}
	for k, v := range probeSchemas {
		extra[k] = v
	}
	return &prober{t: t, mod: load(t, h, wordManifest(t, "probe", extra), module, digest)}
}

func req(cap string, kv ...any) map[string]any {
	m := map[string]any{"cap": cap}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func decodeAnswer(t *testing.T, a answer, v any) {
	t.Helper()
	if a.Error != nil {
		t.Fatalf("%s: %s", a.Error.Code, a.Error.Message)
	}
	if err := json.Unmarshal(a.Result, v); err != nil {
		t.Fatal(err)
	}
}

// noSecrets fails if anything the word or the record holds carries a piece of the grant.
func noSecrets(t *testing.T, g *channel.BackupGrant, res *wasm.Result) {
	t.Helper()
	seen := string(res.Output) + res.Transcript + res.Message
	for _, c := range res.Capabilities {
		seen += string(c.Args)
	}
	for _, p := range append(g.Objects, *g.Manifest) {
		if strings.Contains(seen, p.URL) || strings.Contains(seen, "X-Amz-Signature") || strings.Contains(seen, "X-Amz-Credential") {
			t.Fatalf("the word or its record saw a presigned request")
		}
	}
}

// TestBackupThroughTheHost: a word orchestrates two runs (full, then incremental) of a folder and a
// database; the host walks, dumps, encrypts and uploads to versitygw with the grant it holds, and the
// word never sees the grant. The chain verifies, then restores byte for byte, files and database.
func TestBackupThroughTheHost(t *testing.T) {
	b := newBackupBed(t)
	h := b.host(t)
	p := backupProber(t, h, "change", []string{"/"})

	g1 := b.writeGrant(t, "")
	answers, res := p.runWith(wasm.RunOptions{Grant: g1}, req("backup.begin"), req("backup.paths", "paths", []string{b.data}),
		req("backup.database", "database", b.db), req("backup.commit"))
	var begin capv1.BackupBeginResult
	decodeAnswer(t, answers[0], &begin)
	var commit capv1.BackupCommitResult
	decodeAnswer(t, answers[3], &commit)
	if begin.Kind != backup.KindFull || commit.Run != g1.Run || commit.Files != 2 || len(commit.Databases) != 1 {
		t.Fatalf("first run: %+v %+v", begin, commit)
	}
	noSecrets(t, g1, res)

	writeFile(t, filepath.Join(b.data, "c.txt"), []byte("new"), 0o644)
	g2 := b.writeGrant(t, g1.Run)
	answers, res = p.runWith(wasm.RunOptions{Grant: g2}, req("backup.begin"), req("backup.paths", "paths", []string{b.data}),
		req("backup.database", "database", b.db), req("backup.commit"))
	decodeAnswer(t, answers[3], &commit)
	if commit.Kind != backup.KindIncremental || commit.Stored != 1 || commit.Files != 3 || len(commit.Chain) != 2 {
		t.Fatalf("second run: %+v", commit)
	}
	noSecrets(t, g2, res)

	chain := b.srv.ReadGrant(t, b.target, "node-1", "")
	answers, _ = p.runWith(wasm.RunOptions{Grant: chain.Grant}, req("backup.verify"))
	var v capv1.BackupVerifyResult
	decodeAnswer(t, answers[0], &v)
	if v.Run != g2.Run || v.Files != 3 || len(v.Databases) != 1 {
		t.Fatalf("verify: %+v", v)
	}

	r := backupProber(t, h, "destructive", []string{"/"})
	into := filepath.Join(b.restore, "files")
	answers, _ = r.runWith(wasm.RunOptions{Grant: chain.Grant}, req("backup.restore", "into", into, "path", b.data),
		req("backup.restore", "database", b.db, "into_database", b.db+"_restored"))
	var rf, rd capv1.BackupRestoreResult
	decodeAnswer(t, answers[0], &rf)
	t.Cleanup(func() { backuptest.DropDatabase(t, b.pg, b.db+"_restored") })
	decodeAnswer(t, answers[1], &rd)
	for _, f := range []string{"a.txt", "sub/b.bin", "c.txt"} {
		want, _ := os.ReadFile(filepath.Join(b.data, f))
		got, err := os.ReadFile(filepath.Join(into, f))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s restored: %v", f, err)
		}
	}
	if want, got := backuptest.Dump(t, b.pg, b.db), backuptest.Dump(t, b.pg, b.db+"_restored"); !bytes.Equal(want, got) || !bytes.Contains(got, []byte("CREATE TABLE public.t")) {
		t.Fatalf("the restored database differs from the original:\n%s", got)
	}

	// A byte changed in the bucket behind everyone's back: verify fails, naming the object.
	b.srv.Corrupt(t, b.target.Bucket, chain.Manifests[1].Stream(backup.RoleFiles, "")[0].Key)
	answers, _ = p.runWith(wasm.RunOptions{Grant: chain.Grant}, req("backup.verify"))
	if answers[0].Error == nil || answers[0].Error.Code != errcode.BackupVerifyFailed {
		t.Fatalf("verify after corruption: %+v", answers[0])
	}
}

// TestBackupRefusals: each way a backup, verify or restore is refused has its own code, and a run that
// met any of them never writes a manifest.
func TestBackupRefusals(t *testing.T) {
	b := newBackupBed(t)
	h := b.host(t)
	p := backupProber(t, h, "change", []string{b.data, filepath.Dir(b.data)})
	outside := filepath.Join(filepath.Dir(b.data), "other")
	writeFile(t, filepath.Join(outside, "x"), []byte("x"), 0o644)

	wrongCreds := b.target
	wrongCreds.SecretAccessKey = "not-the-secret"
	wrong, err := presign.New(wrongCreds)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := backuptest.Start(t, backuptest.Over(b.srv.Dir), backuptest.ReadOnly())
	roSigner, err := presign.New(readOnly.Target(b.target.Bucket, b.target.Prefix))
	if err != nil {
		t.Fatal(err)
	}
	// A target whose endpoint answers nothing: a port of this machine's nobody listens on.
	unreachable := b.target
	unreachable.Endpoint = closedEndpoint(t)
	nowhere, err := presign.New(unreachable)
	if err != nil {
		t.Fatal(err)
	}
	grantOf := func(s *presign.Signer) *channel.BackupGrant {
		g, err := s.WriteGrant(context.Background(), presign.WriteRequest{Node: "node-1", Recipients: []string{b.recovery.Recipient().String()}, Objects: 16})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, tc := range []struct {
		name  string
		grant *channel.BackupGrant
		reqs  []map[string]any
		code  string
	}{
		{"no grant", nil, []map[string]any{req("backup.begin")}, errcode.BackupGrantMissing},
		{"a path outside the node's policy", b.writeGrant(t, ""),
			[]map[string]any{req("backup.begin"), req("backup.paths", "paths", []string{outside})}, errcode.BackupPathRefused},
		{"a path outside the manifest", b.writeGrant(t, ""),
			[]map[string]any{req("backup.begin"), req("backup.paths", "paths", []string{"/etc"})}, errcode.CapabilityDenied},
		{"a database outside the node's policy", b.writeGrant(t, ""),
			[]map[string]any{req("backup.begin"), req("backup.database", "database", "postgres")}, errcode.BackupDatabaseRefused},
		{"a database that does not exist", b.writeGrant(t, ""),
			[]map[string]any{req("backup.begin"), req("backup.database", "database", "nosuchdb")}, errcode.BackupDatabaseMissing},
		{"wrong credentials", grantOf(wrong),
			[]map[string]any{req("backup.begin"), req("backup.paths", "paths", []string{b.data})}, errcode.BackupCredentialsInvalid},
		{"a target that refuses writes", grantOf(roSigner),
			[]map[string]any{req("backup.begin"), req("backup.paths", "paths", []string{b.data})}, errcode.BackupTargetRefused},
		{"a target that cannot be reached", grantOf(nowhere),
			[]map[string]any{req("backup.begin"), req("backup.paths", "paths", []string{b.data})}, errcode.BackupTargetUnreachable},
		{"an expired grant", func() *channel.BackupGrant {
			g := b.writeGrant(t, "")
			g.Expires = time.Now().Add(-time.Minute)
			return g
		}(), []map[string]any{req("backup.begin")}, errcode.BackupGrantInvalid},
		{"a grant whose key lies outside its run", func() *channel.BackupGrant {
			g := b.writeGrant(t, "")
			g.Objects[0].Key = backup.ObjectKey(b.target.Prefix, "node-2", g.Run, 1)
			return g
		}(), []map[string]any{req("backup.begin")}, errcode.BackupGrantInvalid},
		{"verify without a read grant", b.writeGrant(t, ""), []map[string]any{req("backup.verify")}, errcode.BackupGrantMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs := append(tc.reqs, req("backup.commit"))
			answers, _ := p.runWith(wasm.RunOptions{Grant: tc.grant}, reqs...)
			var got string
			for _, a := range answers[:len(tc.reqs)] {
				if a.Error != nil {
					got = a.Error.Code
				}
			}
			if got != tc.code {
				t.Fatalf("code %q, want %q (%+v)", got, tc.code, answers)
			}
			// The word tried to commit anyway: a run that failed cannot.
			if last := answers[len(answers)-1]; last.Error == nil {
				t.Fatalf("a run that failed committed: %s", last.Result)
			}
		})
	}
	for _, k := range b.srv.Keys(t, b.target.Bucket, "") {
		if strings.HasSuffix(k, "/"+backup.ManifestName) {
			t.Fatalf("a refused run wrote a manifest: %s", k)
		}
	}

	// PostgreSQL not answering where the node's policy says: pg_dump fails, and says why.
	down := *b.policy
	downPG := *b.pg
	downPG.Host, downPG.Port = "127.0.0.1", closedPort(t)
	down.Postgres = &downPG
	dh := newHost(t, cached(wasm.Config{Backup: &wasm.BackupConfig{Policy: &down, Dir: b.keyDir, Segment: 128 << 10}}))
	answers, _ := backupProber(t, dh, "change", []string{"/"}).runWith(wasm.RunOptions{Grant: b.writeGrant(t, "")},
		req("backup.begin"), req("backup.database", "database", b.db), req("backup.commit"))
	if answers[1].Error == nil || answers[1].Error.Code != errcode.BackupDumpFailed || answers[2].Error == nil {
		t.Fatalf("a dump with PostgreSQL down: %+v", answers)
	}

	// A node without a backup section answers backup.not_configured to everything.
	bare := backupProber(t, newHost(t, cached(wasm.Config{})), "change", []string{"/"})
	if code := bare.one(req("backup.begin"), nil); code != errcode.BackupNotConfigured {
		t.Fatalf("no backup section: %q", code)
	}

	// A restore writes only into an empty or new folder beneath the policy's restore folders.
	g := b.writeGrant(t, "")
	answers, _ = p.runWith(wasm.RunOptions{Grant: g}, req("backup.begin"), req("backup.paths", "paths", []string{b.data}), req("backup.commit"))
	if answers[2].Error != nil {
		t.Fatalf("commit: %+v", answers[2].Error)
	}
	chain := b.srv.ReadGrant(t, b.target, "node-1", "")
	r := backupProber(t, h, "destructive", []string{"/"})
	full := filepath.Join(b.restore, "full")
	writeFile(t, filepath.Join(full, "there"), []byte("x"), 0o644)
	for _, tc := range []struct {
		name string
		req  map[string]any
		code string
	}{
		{"into a folder that is not empty", req("backup.restore", "into", full), errcode.BackupRestoreTargetNotEmpty},
		{"into a folder outside the policy", req("backup.restore", "into", filepath.Join(filepath.Dir(b.restore), "elsewhere")), errcode.BackupPathRefused},
		{"into a database outside the policy", req("backup.restore", "database", b.db, "into_database", "postgres"), errcode.BackupDatabaseRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers, _ := r.runWith(wasm.RunOptions{Grant: chain.Grant}, tc.req)
			if answers[0].Error == nil || answers[0].Error.Code != tc.code {
				t.Fatalf("%+v, want %s", answers[0], tc.code)
			}
		})
	}
	if names, _ := os.ReadDir(full); len(names) != 1 {
		t.Fatalf("a refused restore changed %s: %v", full, names)
	}

	// A read grant naming another node's object is refused before anything is read.
	foreign := *chain.Grant
	foreign.Runs = append([]channel.GrantRun(nil), chain.Grant.Runs...)
	last := &foreign.Runs[len(foreign.Runs)-1]
	last.Objects = append([]channel.Presigned(nil), last.Objects...)
	last.Objects[0].Key = backup.ObjectKey(b.target.Prefix, "node-2", last.Run, 1)
	answers, _ = p.runWith(wasm.RunOptions{Grant: &foreign}, req("backup.verify"))
	if answers[0].Error == nil || answers[0].Error.Code != errcode.BackupGrantInvalid {
		t.Fatalf("a read grant outside the node's folder: %+v", answers[0])
	}
}

// closedPort is a loopback port nothing listens on: one the kernel handed out and that was closed.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func closedEndpoint(t *testing.T) string {
	return "http://127.0.0.1:" + strconv.Itoa(closedPort(t))
}
