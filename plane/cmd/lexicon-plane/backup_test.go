package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

const backupCredential = "cred-8QzW3nX5vB7mK2pL9rT4yU6"

// fill puts a token, a node, a queued job, a release and an account with a sealed credential into the
// store at url, sealed under the key at keyFile.
func fill(t *testing.T, url, keyFile string) (store.Node, store.Job) {
	t.Helper()
	ctx := t.Context()
	st, err := open.URL(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key, err := seal.LoadOrCreate(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	_, hash := tokens.Mint()
	if _, err := st.TokenCreate(ctx, store.TokenCreateParams{Name: "root", Role: store.RoleAdmin, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	n := storetest.Node(t, st, "web-1", "1.0.0", time.Now())
	job, err := st.JobCreate(ctx, store.JobCreateParams{NodeID: n.ID, Word: "w", Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReleasePut(ctx, store.ReleasePutParams{Sequence: 1, Version: "1.0.0", StatementDigest: strings.Repeat("a", 64),
		Bundle: []byte(`{}`), Artifacts: []store.ArtifactPut{{Name: "agent/linux-amd64", Digest: hexSum("agent"), Data: []byte("agent")}}, By: "root"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AccountCreate(ctx, store.AccountCreateParams{Name: "lab", Driver: "dns-memory", Settings: json.RawMessage(`{}`),
		Sealed: key.Seal([]byte(backupCredential), seal.AccountContext("lab", "dns-memory")), KeyID: key.ID(), By: "root"}); err != nil {
		t.Fatal(err)
	}
	return n, job
}

// check opens the restored store at url with the restored key and finds everything fill put there usable.
func check(t *testing.T, url, keyFile string, node store.Node, job store.Job) {
	t.Helper()
	ctx := t.Context()
	st, err := open.URL(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, err := st.NodeGet(ctx, store.NodeGetParams{ID: node.ID}); err != nil || n.Key != node.Key || n.State != store.NodeActive {
		t.Fatalf("the node after restore: %v %+v", err, n)
	}
	if j, err := st.JobGet(ctx, store.JobGetParams{ID: job.ID}); err != nil || j.State != store.JobQueued {
		t.Fatalf("the job after restore: %v %+v", err, j)
	}
	if r, err := st.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: 1}); err != nil || r.Version != "1.0.0" {
		t.Fatalf("the release after restore: %v %+v", err, r)
	}
	a, err := st.AccountGet(ctx, store.AccountGetParams{Name: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	key, err := seal.Load(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if cred, err := key.Open(a.Sealed, seal.AccountContext("lab", "dns-memory")); err != nil || string(cred) != backupCredential {
		t.Fatalf("the sealed credential after restore: %v", err)
	}
}

func runPlane(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), "lexicon-plane", "", commands(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestBackupRestoreSQLite: a backup of a SQLite plane, restored into an empty data folder on another
// "machine", keeps every node, job, release and sealed credential usable; the backup file is private,
// and a restore onto a folder that holds a store, or another master key, is refused.
func TestBackupRestoreSQLite(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	node, job := fill(t, filepath.Join(a, "plane.db"), filepath.Join(a, "master.key"))
	file := filepath.Join(t.TempDir(), "plane.backup")
	if code, _, errOut := runPlane(t, "backup", "--data", a, "--out", file); code != 0 {
		t.Fatalf("backup: %d %s", code, errOut)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the backup file: %v %v", err, fi.Mode())
	}
	if code, _, _ := runPlane(t, "backup", "--data", a, "--out", file); code == 0 {
		t.Fatal("a backup overwrote a file")
	}
	if code, out, errOut := runPlane(t, "restore", "--data", b, "--in", file); code != 0 || !strings.Contains(out, "restored the sqlite store") {
		t.Fatalf("restore: %d %s %s", code, out, errOut)
	}
	check(t, filepath.Join(b, "plane.db"), filepath.Join(b, "master.key"), node, job)
	if code, _, errOut := runPlane(t, "restore", "--data", b, "--in", file); code == 0 || !strings.Contains(errOut, "must not exist") {
		t.Fatalf("a restore over a store: %d %s", code, errOut)
	}
	c := t.TempDir()
	if _, err := seal.LoadOrCreate(filepath.Join(c, "master.key")); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runPlane(t, "restore", "--data", c, "--in", file); code != 2 || !strings.Contains(errOut, "another master key") {
		t.Fatalf("a restore beside another key: %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(c, "plane.db")); err == nil {
		t.Fatal("a refused restore left a store")
	}
}

// TestBackupRestorePostgres: the same round trip through pg_dump and pg_restore: the schema is backed
// up, dropped (the empty machine), and restored.
func TestBackupRestorePostgres(t *testing.T) {
	url := storetest.PostgresURL(t)
	a, b := t.TempDir(), t.TempDir()
	node, job := fill(t, url, filepath.Join(a, "master.key"))
	file := filepath.Join(t.TempDir(), "plane.backup")
	if code, _, errOut := runPlane(t, "backup", "--data", a, "--db", url, "--out", file); code != 0 {
		t.Fatalf("backup: %d %s", code, errOut)
	}
	if code, _, errOut := runPlane(t, "restore", "--data", b, "--db", url, "--in", file); code == 0 {
		t.Fatalf("a restore over the plane's own tables: %s", errOut)
	}
	schema := strings.Split(strings.SplitN(url, "search_path=", 2)[1], "&")[0]
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(t.Context())
	if code, out, errOut := runPlane(t, "restore", "--data", b, "--db", url, "--in", file); code != 0 || !strings.Contains(out, "restored the postgres store") {
		t.Fatalf("restore: %d %s %s", code, out, errOut)
	}
	check(t, url, filepath.Join(b, "master.key"), node, job)
}

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
