package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/plane/internal/backups"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestFleetDefaultBacksUpNodes: on real agents running the signed backup words, the fleet's default
// policy backs up two nodes' folders and a PostgreSQL database to versitygw; the plane dispatches each
// run with its grant, witnesses every object in the bucket with its own listing, verifies the run on
// the node, and shows both nodes green. Then, still on the real agents: a restore queued with lexicon
// backups restore brings web-1's files and database back byte for byte; an object of web-2's run
// corrupted in the bucket fails its next verify (plane:backup_verify); and web-1 backing up through a
// proxy that drops one object's PUT (answering 200) is judged incomplete (plane:backup_incomplete),
// and through one that drops every PUT not landing (plane:backups_not_landing). Last, retention: a
// keep below the fleet's floor is refused, and web-1's next witnessed run prunes a planted chain older
// than the floor whole and keeps one inside it.
//
// It runs on both stores, side by side: each has its own versitygw (folder, port, bucket), PostgreSQL
// databases, plane and agents, so the two share nothing.
func TestFleetDefaultBacksUpNodes(t *testing.T) {
	t.Parallel() // waits mostly (on intervals, a browser, a machine): it overlaps the others that do
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			fleetDefaultBacksUpNodes(t, backend)
		})
	}
}

func fleetDefaultBacksUpNodes(t *testing.T, backend string) {
	srv := backuptest.Start(t)
	bucket := srv.Bucket(t, "backups")
	pg := backuptest.Postgres(t)
	db := backuptest.Database(t, pg)
	if out, err := backuptest.Psql(pg, db, `CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 100);`); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f := newFleet(t, backend, fleetOptions{serveArgs: []string{"--backup-every", "1s", "--reconcile-every", "1s"}, stage: func(dir string) {
		for _, name := range []string{"backup", "backup_verify", "backup_restore"} {
			m, err := os.ReadFile(filepath.Join(root, "primitives", name, "manifest.json"))
			must(t, err)
			stage(t, dir, name, m, filepath.Join(root, "build", "wasm", name+".wasm"), name+".wasm")
		}
	}})
	keys := filepath.Join(f.dir, "recovery")
	kg := runJSON(t, false, "lexicon-release", "backup-keygen", "--out", keys, "-o", "json")
	secret := filepath.Join(f.dir, "bucket.secret")
	must(t, os.WriteFile(secret, []byte(srv.SecretKey+"\n"), 0o600))
	f.lexicon(false, "backups", "targets", "add", "--name", "main", "--endpoint", srv.Endpoint, "--region", backuptest.Region,
		"--bucket", bucket, "--prefix", "fleet", "--access-key-id", srv.AccessKey, "--secret-file", secret, "--recovery", kg["recipient"].(string))

	restored, restoredDB := testkit.SafeDir(t), db+"_r" // a restore writes only beneath folders no one but root (or us) can swap
	t.Cleanup(func() { backuptest.DropDatabase(t, pg, restoredDB) })
	var agents []*agent
	for _, name := range []string{"web-1", "web-2"} {
		data := filepath.Join(f.dir, "data", name)
		must(t, os.MkdirAll(filepath.Join(data, "sub"), 0o755))
		must(t, os.WriteFile(filepath.Join(data, "sub", "a.txt"), []byte("hello from "+name), 0o644))
		// web-1 takes destructive words (a restore), into its restore folder and database only.
		destructive, bp := "refuse", backup.Policy{Paths: []string{filepath.Join(f.dir, "data")}, Databases: []string{db}, Postgres: pg}
		if name == "web-1" {
			destructive, bp.RestorePaths, bp.Databases = "accept", []string{restored}, []string{db, restoredDB}
		}
		pol, _ := json.Marshal(map[string]any{
			"classes": map[string]string{"look": "accept", "change": "accept", "destructive": destructive},
			"backup":  bp,
		})
		agents = append(agents, f.enrol(name, string(pol)))
	}
	f.lexicon(false, "backups", "policy", "set", "--target", "main", "--path", filepath.Join(f.dir, "data"), "--database", db)

	// Each node's run is judged witnessed, then its first verify passes.
	for _, a := range agents {
		f.planeLog.WaitFor(t, `"node":"`+a.nodeID+`","purpose":"backup","state":"witnessed"`)
		verified := `"node":"` + a.nodeID + `","purpose":"verify","state":"verified"`
		if got := f.planeLog.WaitForAny(t, verified, `"node":"`+a.nodeID+`","purpose":"verify","state":"verify_failed"`); got != verified {
			t.Fatalf("%s's first verify failed (the plane's log below says why)", a.name)
		}
	}
	list := f.lexicon(false, "backups", "list")
	nodes, _ := list["nodes"].([]any)
	for _, n := range nodes {
		if h := n.(map[string]any); h["green"] != true || h["last_verified"] == nil || h["last_full"] == nil {
			t.Fatalf("a node is not green, verified, with a full run: %v", h)
		}
	}
	for _, a := range agents {
		keys := srv.Keys(t, bucket, "fleet/"+a.nodeID+"/")
		manifests := 0
		for _, k := range keys {
			if strings.HasSuffix(k, "/manifest.json") {
				manifests++
			}
		}
		if manifests != 1 || len(keys) < 3 {
			t.Fatalf("%s's prefix holds %v", a.name, keys)
		}
		show := f.lexicon(false, "backups", "show", a.nodeID)
		runs, _ := show["runs"].([]any)
		if len(runs) < 2 {
			t.Fatalf("%s: %v", a.name, show)
		}
	}

	web1, web2 := agents[0], agents[1]

	// A restore queued from the plane: files, then the database, each waited for.
	into := filepath.Join(restored, "files")
	if j := f.lexicon(false, "backups", "restore", "web-1", "--into", into, "--path", filepath.Join(f.dir, "data", "web-1"), "--wait"); j["state"] != "completed" {
		t.Fatalf("files restore: %v", j)
	}
	if got, err := os.ReadFile(filepath.Join(into, "sub", "a.txt")); err != nil || string(got) != "hello from web-1" {
		t.Fatalf("restored a.txt %q %v", got, err)
	}
	if j := f.lexicon(false, "backups", "restore", "web-1", "--database", db, "--into-database", restoredDB, "--wait"); j["state"] != "completed" {
		t.Fatalf("database restore: %v", j)
	}
	if a, b := backuptest.Dump(t, pg, db), backuptest.Dump(t, pg, restoredDB); !equalDumps(a, b, db, restoredDB) {
		t.Fatalf("the restored database differs from its source")
	}
	f.planeLog.WaitFor(t, `"node":"`+web1.nodeID+`","purpose":"restore","state":"restored"`)
	// A node that refuses destructive words refuses the restore; nothing is written.
	if j := f.lexicon(true, "backups", "restore", "web-2", "--into", filepath.Join(f.dir, "nope"), "--wait"); j["state"] == "completed" {
		t.Fatalf("web-2 restored: %v", j)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "nope")); !os.IsNotExist(err) {
		t.Fatalf("a refused restore wrote: %v", err)
	}

	// An object of web-2's run altered in the bucket: its next verify fails. A policy's intervals are a
	// minute at least, and the first verify started about that long ago.
	for _, k := range srv.Keys(t, bucket, "fleet/"+web2.nodeID+"/") {
		if strings.HasSuffix(k, ".age") {
			srv.Corrupt(t, bucket, k)
			break
		}
	}
	f.lexicon(false, "backups", "policy", "set", "--node", "web-2", "--target", "main", "--path", filepath.Join(f.dir, "data"),
		"--database", db, "--verify-every", "1m")
	f.planeLog.WaitFor(t, `"node":"`+web2.nodeID+`","purpose":"verify","state":"verify_failed"`)
	f.planeLog.WaitFor(t, `"node":"`+web2.nodeID+`","source":"plane:backup_verify"`)

	// web-1 backs up every minute through a proxy in front of the same versitygw, which first drops the
	// PUT of each run's first object (answering 200), then every PUT.
	var drop atomic.Int32 // 0: pass, 1: the first object of a run, 2: every PUT
	up, _ := url.Parse(srv.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(up) // keeps the Host the requests were signed for
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode := drop.Load()
		if r.Method == http.MethodPut && (mode == 2 || mode == 1 && strings.HasSuffix(r.URL.Path, "/000001.age")) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusOK)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	f.lexicon(false, "backups", "targets", "add", "--name", "proxied", "--endpoint", proxy.URL, "--region", backuptest.Region,
		"--bucket", bucket, "--prefix", "fleet", "--access-key-id", srv.AccessKey, "--secret-file", secret, "--recovery", kg["recipient"].(string))
	drop.Store(1)
	f.lexicon(false, "backups", "policy", "set", "--node", "web-1", "--target", "proxied", "--path", filepath.Join(f.dir, "data"),
		"--database", db, "--every", "1m")
	f.planeLog.WaitFor(t, `"node":"`+web1.nodeID+`","purpose":"backup","state":"incomplete"`)
	f.planeLog.WaitFor(t, `"node":"`+web1.nodeID+`","source":"plane:backup_incomplete"`)
	drop.Store(2)
	f.planeLog.WaitFor(t, `"node":"`+web1.nodeID+`","purpose":"backup","state":"not_landing"`)
	f.planeLog.WaitFor(t, `"node":"`+web1.nodeID+`","source":"plane:backups_not_landing"`)
	show := f.lexicon(false, "backups", "show", "web-1")
	if h := show["health"].(map[string]any); h["green"] == true {
		t.Fatalf("web-1 green after runs that did not land: %v", h)
	}

	// Retention, which only the plane does, from its own listing once a run of the node is witnessed.
	// Copies of web-1's first run planted under older run ids make two older chains: a full run and
	// its incremental 30 days old, and a full run 6 days old. web-1 keeps the floor's days (fewer is
	// refused); its next run through the proxy, now passing everything, prunes the old chain whole and
	// keeps the one inside the floor.
	if j := f.lexicon(true, "backups", "policy", "set", "--node", "web-1", "--target", "proxied", "--path", filepath.Join(f.dir, "data"),
		"--database", db, "--every", "1m", "--keep-days", strconv.Itoa(backups.FloorDays-1)); j["code"] != errcode.BackupKeepBelowFloor {
		t.Fatalf("a keep below the floor: %v", j)
	}
	target := srv.Target(bucket, "fleet")
	var first *backup.Manifest
	for _, m := range srv.Manifests(t, target, web1.nodeID) {
		if m.Kind == backup.KindFull && (first == nil || m.Run < first.Run) {
			first = m // the run witnessed on the direct target: every object of it is there
		}
	}
	put := func(key string, b []byte) {
		_, err := srv.Client(t).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)})
		must(t, err)
	}
	now := time.Now()
	plant := func(age time.Duration, chain ...string) string {
		m := *first
		m.Run, m.Kind, m.Started, m.Finished = backup.NewRunID(now.Add(-age), ""), backup.KindFull, now.Add(-age), now.Add(-age)
		if len(chain) > 0 {
			m.Kind = backup.KindIncremental
		}
		m.Chain, m.Objects = append(slices.Clone(chain), m.Run), slices.Clone(first.Objects)
		for i, o := range m.Objects {
			m.Objects[i].Key = backup.RunPrefix(target.Prefix, web1.nodeID, m.Run) + path.Base(o.Key)
			put(m.Objects[i].Key, srv.Object(t, bucket, o.Key))
		}
		b, err := json.Marshal(m)
		must(t, err)
		put(backup.ManifestKey(target.Prefix, web1.nodeID, m.Run), b)
		return m.Run
	}
	old := plant(30 * 24 * time.Hour)
	oldIncremental := plant(29*24*time.Hour, old)
	inFloor := plant(time.Duration(backups.FloorDays-1) * 24 * time.Hour)
	f.lexicon(false, "backups", "policy", "set", "--node", "web-1", "--target", "proxied", "--path", filepath.Join(f.dir, "data"),
		"--database", db, "--every", "1m", "--keep-days", strconv.Itoa(backups.FloorDays))
	drop.Store(0)
	f.planeLog.WaitFor(t, `"node":"`+web1.nodeID+`","target":"proxied","chains":["`+old+`"]`)
	runs := map[string]int{}
	for _, k := range srv.Keys(t, bucket, backup.NodePrefix(target.Prefix, web1.nodeID)) {
		run, _, _ := backup.RunOfKey(backup.NodePrefix(target.Prefix, web1.nodeID), k)
		runs[run]++
	}
	if runs[old] != 0 || runs[oldIncremental] != 0 || runs[inFloor] != len(first.Objects)+1 || runs[first.Run] != len(first.Objects)+1 {
		t.Fatalf("after retention web-1's prefix holds, by run: %v (pruned %s and %s; kept %s and %s)", runs, old, oldIncremental, inFloor, first.Run)
	}
	f.lexicon(false, "backups", "policy", "set", "--node", "web-1", "--off")
}

// equalDumps compares two plain dumps of databases that differ only in name.
func equalDumps(a, b []byte, nameA, nameB string) bool {
	return strings.ReplaceAll(string(a), nameA, "X") == strings.ReplaceAll(string(b), nameB, "X")
}
