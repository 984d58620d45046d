package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
)

// TestFleetDefaultBacksUpNodes: on real agents running the signed backup words, the fleet's default
// policy backs up two nodes' folders and a PostgreSQL database to versitygw; the plane dispatches each
// run with its grant, witnesses every object in the bucket with its own listing, verifies the run on
// the node, and shows both nodes green.
func TestFleetDefaultBacksUpNodes(t *testing.T) {
	srv := backuptest.Start(t)
	bucket := srv.Bucket(t, "backups")
	pg := backuptest.Postgres(t)
	db := backuptest.Database(t, pg)
	if out, err := backuptest.Psql(pg, db, `CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 100);`); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f := newFleet(t, "sqlite", fleetOptions{serveArgs: []string{"--backup-every", "1s"}, stage: func(dir string) {
		for _, name := range []string{"backup", "backup_verify"} {
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

	var agents []*agent
	for _, name := range []string{"web-1", "web-2"} {
		data := filepath.Join(f.dir, "data", name)
		must(t, os.MkdirAll(filepath.Join(data, "sub"), 0o755))
		must(t, os.WriteFile(filepath.Join(data, "sub", "a.txt"), []byte("hello from "+name), 0o644))
		pol, _ := json.Marshal(map[string]any{
			"classes": map[string]string{"look": "accept", "change": "accept", "destructive": "refuse"},
			"backup":  backup.Policy{Paths: []string{filepath.Join(f.dir, "data")}, Databases: []string{db}, Postgres: pg},
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
}
