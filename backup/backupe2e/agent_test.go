// Package backupe2e runs backups end to end on real parts: the lexicon-agent binary running the signed
// backup words from a release, versitygw on loopback, PostgreSQL, and Debian's age, s3cmd, tar and
// pg_restore for the restore by hand. The plane's side is the presign package the plane will call.
package backupe2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/backuptest"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// root is the repository root, where `make wasm` leaves build/wasm.
var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}()

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// binaries builds lexicon-agent and lexicon-release once per test binary.
func binaries(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "lexicon-backup-e2e-")
		if binErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./agent/cmd/lexicon-agent", "./registry/cmd/lexicon-release")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("building binaries: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// node is one machine: its release of the backup words, its policy, its state folder, and the
// PostgreSQL database and folder it backs up.
type node struct {
	id                string
	release, trust    string
	config, state     string
	cache             string
	data, restore     string
	pg                *backup.Postgres
	db                string
	srv               *backuptest.Server
	target            presign.Target // what the plane holds
	signer            *presign.Signer
	recoveryKey       string // the recovery key file, made offline
	recoveryRecipient string
}

func newNode(t *testing.T) *node {
	t.Helper()
	bin := binaries(t)
	n := &node{id: "web-1", srv: backuptest.Start(t), pg: backuptest.Postgres(t)}
	n.target = n.srv.Target(n.srv.Bucket(t, "backups"), "fleet")
	var err error
	if n.signer, err = presign.New(n.target); err != nil {
		t.Fatal(err)
	}
	// The recovery key is made offline; the plane and the node only ever see its public half.
	keyDir := filepath.Join(t.TempDir(), "recovery")
	out := run(t, 0, filepath.Join(bin, "lexicon-release"), "backup-keygen", "--out", keyDir, "-o", "json")
	var kg struct {
		Recipient string
		KeyFile   string `json:"key_file"`
	}
	if err := json.Unmarshal(out, &kg); err != nil || !strings.HasPrefix(kg.Recipient, "age1") {
		t.Fatalf("backup-keygen: %s (%v)", out, err)
	}
	n.recoveryKey, n.recoveryRecipient = kg.KeyFile, kg.Recipient

	n.release, n.trust = signedRelease(t)
	n.config, n.state, n.cache = filepath.Join(t.TempDir(), "config"), filepath.Join(t.TempDir(), "state"), filepath.Join(t.TempDir(), "cache")
	must(t, os.MkdirAll(n.state, 0o700))
	n.db = backuptest.Database(t, n.pg)
	psql(t, n.pg, n.db, `CREATE TABLE orders (id int PRIMARY KEY, item text, at timestamptz);
		INSERT INTO orders SELECT g, 'item ' || g, '2026-01-01'::timestamptz + g * interval '1 minute' FROM generate_series(1, 2000) g;`)
	n.data = filepath.Join(t.TempDir(), "srv", "app")
	writeFile(t, filepath.Join(n.data, "config.yaml"), []byte("listen: 8080\n"), 0o640)
	writeFile(t, filepath.Join(n.data, "uploads", "photo.jpg"), random(t, 20<<20), 0o644)
	writeFile(t, filepath.Join(n.data, "uploads", "old.txt"), []byte("to be deleted"), 0o644)
	must(t, os.Symlink("uploads/photo.jpg", filepath.Join(n.data, "latest")))
	n.restore = testkit.SafeDir(t)
	pol := map[string]any{
		"classes": map[string]string{"look": "accept", "change": "accept", "destructive": "accept"},
		"backup": backup.Policy{Paths: []string{n.data}, RestorePaths: []string{n.restore},
			Databases: []string{n.db, n.db + "_restored", "nosuchdb"}, Postgres: n.pg},
	}
	b, _ := json.Marshal(pol)
	writeFile(t, filepath.Join(n.config, "policy.json"), b, 0o644)
	t.Cleanup(func() { backuptest.DropDatabase(t, n.pg, n.db+"_restored") })
	return n
}

// signedRelease signs a release of the three backup words with a fresh publisher key.
func signedRelease(t testing.TB) (release, trust string) {
	t.Helper()
	mods := t.TempDir()
	for _, w := range []string{"backup", "backup_verify", "backup_restore"} {
		module, err := os.ReadFile(filepath.Join(root, "build", "wasm", w+".wasm"))
		if err != nil {
			t.Fatalf("build the words first (make wasm): %v", err)
		}
		manifest, err := os.ReadFile(filepath.Join(root, "primitives", w, "manifest.json"))
		must(t, err)
		writeFile(t, filepath.Join(mods, w, "manifest.json"), manifest, 0o644)
		writeFile(t, filepath.Join(mods, w, w+".wasm"), module, 0o644)
	}
	key := keys.NewPublisher()
	release, trust = filepath.Join(t.TempDir(), "release"), filepath.Join(t.TempDir(), "trust")
	if _, err := registry.Build(registry.BuildOptions{Key: key, ModulesDir: mods, Release: "1.0.0", Sequence: 1, OutDir: release, Now: time.Now()}); err != nil {
		t.Fatalf("build: %v", err)
	}
	must(t, registry.InitTrust(trust, []keys.PublisherPublic{key.Public()}, nil))
	return release, trust
}

// grantFile writes a grant as the agent reads it: a file only its owner may read.
func grantFile(t testing.TB, g *channel.BackupGrant) string {
	t.Helper()
	b, err := json.Marshal(g)
	must(t, err)
	p := filepath.Join(t.TempDir(), "grant.json")
	writeFile(t, p, b, 0o600)
	return p
}

// writeGrant is what the plane hands a backup job: a fresh run under the node's folder.
func (n *node) writeGrant(t *testing.T, signer *presign.Signer, parent string) *channel.BackupGrant {
	t.Helper()
	g, err := signer.WriteGrant(context.Background(), presign.WriteRequest{Node: n.id, Parent: parent, Recipients: []string{n.recoveryRecipient}, Objects: 32})
	must(t, err)
	return g
}

// wordArgs are the arguments of `lexicon-agent word run` for word on this node.
func (n *node) wordArgs(word, params, grant string) []string {
	return []string{"word", "run", "--release", n.release, "--trust", n.trust, "--word", word, "--params", params,
		"--grant", grant, "--config-dir", n.config, "--state-dir", n.state, "--cache-dir", n.cache, "-o", "json"}
}

// result is what `word run -o json` prints.
type result struct {
	OK      bool            `json:"ok"`
	Outcome string          `json:"outcome"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Output  json.RawMessage `json:"output"`
}

// word runs a word on the node with the real agent binary and returns its result.
func (n *node) word(t *testing.T, word, params string, g *channel.BackupGrant, wantOK bool) result {
	t.Helper()
	exit := 0
	if !wantOK {
		exit = 1
	}
	out := run(t, exit, filepath.Join(binaries(t), "lexicon-agent"), n.wordArgs(word, params, grantFile(t, g))...)
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("word run printed %s: %v", out, err)
	}
	if r.OK != wantOK {
		t.Fatalf("%s: ok=%v %s %s", word, r.OK, r.Code, r.Message)
	}
	return r
}

type backupOutput struct {
	Run, Kind string
	Chain     []string
	Objects   int
	Files     struct{ Files, Stored int64 }
	Databases []struct {
		Database string
		Bytes    int64
	}
}

func (n *node) backup(t *testing.T, g *channel.BackupGrant) backupOutput {
	t.Helper()
	params := fmt.Sprintf(`{"paths": [%q], "databases": [%q]}`, n.data, n.db)
	r := n.word(t, "backup", params, g, true)
	var out backupOutput
	must(t, json.Unmarshal(r.Output, &out))
	return out
}

// TestAgentBackups: two real agent-run backups of a folder and a database to versitygw; a third run
// killed mid-upload leaves no manifest, and the next succeeds on the last committed run; verify
// passes; restore brings files and database back byte for byte; and after a byte of the bucket is
// changed, verify fails.
func TestAgentBackups(t *testing.T) {
	n := newNode(t)
	g1 := n.writeGrant(t, n.signer, "")
	first := n.backup(t, g1)
	if first.Kind != backup.KindFull || first.Files.Files != 3 || len(first.Databases) != 1 {
		t.Fatalf("first run: %+v", first)
	}

	// The tree and the database change; the next run is incremental on the first.
	writeFile(t, filepath.Join(n.data, "config.yaml"), []byte("listen: 8443\n"), 0o640)
	must(t, os.Remove(filepath.Join(n.data, "uploads", "old.txt")))
	writeFile(t, filepath.Join(n.data, "uploads", "new.txt"), []byte("fresh"), 0o600)
	psql(t, n.pg, n.db, `INSERT INTO orders SELECT g, 'later ' || g, now() FROM generate_series(2001, 2100) g`)
	g2 := n.writeGrant(t, n.signer, g1.Run)
	second := n.backup(t, g2)
	if second.Kind != backup.KindIncremental || second.Files.Stored != 2 || second.Chain[0] != g1.Run {
		t.Fatalf("second run: %+v", second)
	}

	// The third run's upload is held at its second object, and the agent killed there.
	proxy := newHoldingProxy(t, n.srv.Endpoint, nthPut(2))
	viaProxy := n.target
	viaProxy.Endpoint = proxy.URL
	proxied, err := presign.New(viaProxy)
	must(t, err)
	writeFile(t, filepath.Join(n.data, "uploads", "photo.jpg"), random(t, 20<<20), 0o644) // a new 20 MiB to upload
	g3 := n.writeGrant(t, proxied, g2.Run)
	n.killWhenHeld(t, proxy, "the third run's second upload", "backup", fmt.Sprintf(`{"paths": [%q], "databases": [%q]}`, n.data, n.db), g3)
	keys := n.srv.Keys(t, n.target.Bucket, backup.RunPrefix(n.target.Prefix, n.id, g3.Run))
	if len(keys) == 0 {
		t.Fatal("the killed run uploaded nothing: it was not killed mid-upload")
	}
	for _, k := range keys {
		if strings.HasSuffix(k, "/"+backup.ManifestName) {
			t.Fatalf("the killed run wrote its manifest: %v", keys)
		}
	}
	if _, ok := n.srv.Manifests(t, n.target, n.id)[g3.Run]; ok {
		t.Fatal("the killed run counts as a restore point")
	}

	// The plane saw nothing land for the killed run: the next run builds on the second, and succeeds.
	g4 := n.writeGrant(t, n.signer, g2.Run)
	fourth := n.backup(t, g4)
	if fourth.Kind != backup.KindIncremental || len(fourth.Chain) != 3 || fourth.Chain[1] != g2.Run {
		t.Fatalf("the run after the kill: %+v", fourth)
	}
	wantDump := backuptest.Dump(t, n.pg, n.db)

	chain := n.srv.ReadGrant(t, n.target, n.id, "")
	if chain.Grant.Runs[len(chain.Grant.Runs)-1].Run != g4.Run {
		t.Fatalf("the newest restore point is not the fourth run: %+v", chain.Manifests)
	}
	n.word(t, "backup_verify", `{}`, chain.Grant, true)

	into := filepath.Join(n.restore, "app")
	n.word(t, "backup_restore", fmt.Sprintf(`{"into": %q, "path": %q}`, into, n.data), chain.Grant, true)
	sameTree(t, n.data, into)
	n.word(t, "backup_restore", fmt.Sprintf(`{"database": %q, "into_database": %q}`, n.db, n.db+"_restored"), chain.Grant, true)
	if got := backuptest.Dump(t, n.pg, n.db+"_restored"); !bytes.Equal(got, wantDump) {
		t.Fatal("the restored database is not the database backed up")
	}

	t.Run("by hand", func(t *testing.T) { n.restoreByHand(t, wantDump) })
	t.Run("killed mid-restore", func(t *testing.T) { n.killedRestores(t, chain.Manifests, wantDump) })
	t.Run("refusals", n.refusals)

	// One byte changed in the bucket, behind the node's and the plane's backs: verify fails.
	n.srv.Corrupt(t, n.target.Bucket, chain.Manifests[len(chain.Manifests)-1].Stream(backup.RoleFiles, "")[0].Key)
	v := n.word(t, "backup_verify", `{}`, chain.Grant, false)
	if v.Code != "backup.verify_failed" {
		t.Fatalf("verify after corruption: %s %s", v.Code, v.Message)
	}
}

// refusals: a folder outside the node's policy, a database that does not exist, wrong credentials and
// a target that refuses writes each fail the backup word with their own code, and none of those runs
// becomes a restore point.
func (n *node) refusals(t *testing.T) {
	before := len(n.srv.Manifests(t, n.target, n.id))
	other := filepath.Join(filepath.Dir(n.data), "other")
	writeFile(t, filepath.Join(other, "x"), []byte("x"), 0o644)
	wrong := n.target
	wrong.SecretAccessKey = "not-the-secret"
	wrongSigner, err := presign.New(wrong)
	must(t, err)
	ro := backuptest.Start(t, backuptest.Over(n.srv.Dir), backuptest.ReadOnly())
	roSigner, err := presign.New(ro.Target(n.target.Bucket, n.target.Prefix))
	must(t, err)
	files := fmt.Sprintf(`{"paths": [%q]}`, n.data)
	for _, tc := range []struct {
		name, params string
		signer       *presign.Signer
		code         string
	}{
		{"a folder outside the policy", fmt.Sprintf(`{"paths": [%q]}`, other), n.signer, "backup.path_refused"},
		{"a database that does not exist", `{"databases": ["nosuchdb"]}`, n.signer, "backup.database_missing"},
		{"wrong credentials", files, wrongSigner, "backup.credentials_invalid"},
		{"a target that refuses writes", files, roSigner, "backup.target_refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := n.word(t, "backup", tc.params, n.writeGrant(t, tc.signer, ""), false)
			if r.Code != tc.code {
				t.Fatalf("%s: %s", r.Code, r.Message)
			}
		})
	}
	if after := len(n.srv.Manifests(t, n.target, n.id)); after != before {
		t.Fatalf("refused runs made %d restore points", after-before)
	}
}

// killWhenHeld runs word with the real agent and kills it (and its word worker) once proxy holds the
// request it waits for.
func (n *node) killWhenHeld(t *testing.T, proxy *holdingProxy, what, word, params string, g *channel.BackupGrant) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binaries(t), "lexicon-agent"), n.wordArgs(word, params, grantFile(t, g))...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, cmd.Start())
	testkit.Wait(t, proxy.held, what+" to arrive")
	must(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
	_ = cmd.Wait()
}

// killedRestores kills the agent in the middle of a restore of files, and of a database: neither leaves
// anything restored behind, and the same restore run again succeeds.
func (n *node) killedRestores(t *testing.T, chain []*backup.Manifest, wantDump []byte) {
	last := chain[len(chain)-1]
	via := func(hold func(*http.Request) bool) (*holdingProxy, *channel.BackupGrant) {
		proxy := newHoldingProxy(t, n.srv.Endpoint, hold)
		target := n.target
		target.Endpoint = proxy.URL
		return proxy, n.srv.ReadGrant(t, target, n.id, last.Run).Grant
	}
	direct := n.srv.ReadGrant(t, n.target, n.id, last.Run).Grant

	into := filepath.Join(n.restore, "killed")
	proxy, g := via(getOf(last.Stream(backup.RoleFiles, "")[0].Key))
	n.killWhenHeld(t, proxy, "the restore's download of the files", "backup_restore", fmt.Sprintf(`{"into": %q, "path": %q}`, into, n.data), g)
	entries, _ := os.ReadDir(into)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".lexicon-restore-") {
			t.Fatalf("a killed restore left %s in place", e.Name())
		}
	}
	n.word(t, "backup_restore", fmt.Sprintf(`{"into": %q, "path": %q}`, into, n.data), direct, true)
	sameTree(t, n.data, into)

	target := n.db + "_restored"
	backuptest.DropDatabase(t, n.pg, target)
	proxy, g = via(getOf(last.Stream(backup.RoleDatabase, n.db)[0].Key))
	n.killWhenHeld(t, proxy, "the restore's download of the dump", "backup_restore", fmt.Sprintf(`{"database": %q, "into_database": %q}`, n.db, target), g)
	if out, _ := backuptest.Psql(n.pg, "postgres", "SELECT count(*) FROM pg_database WHERE datname = '"+target+"'"); strings.TrimSpace(string(out)) != "0" {
		t.Fatalf("a killed restore left the database %s", target)
	}
	n.word(t, "backup_restore", fmt.Sprintf(`{"database": %q, "into_database": %q}`, n.db, target), direct, true)
	if got := backuptest.Dump(t, n.pg, target); !bytes.Equal(got, wantDump) {
		t.Fatal("the database restored after a killed restore is not the database backed up")
	}
	scratch := backup.ScratchDatabase("restore", n.id, target)
	if out, _ := backuptest.Psql(n.pg, "postgres", "SELECT count(*) FROM pg_database WHERE datname = '"+scratch+"'"); strings.TrimSpace(string(out)) != "0" {
		t.Fatalf("the scratch database %s was left behind", scratch)
	}
}

// restoreByHand follows docs/backup-restore-by-hand.md with Debian's tools, the bucket's credentials
// and the recovery key, and nothing of Lexicon's.
func (n *node) restoreByHand(t *testing.T, wantDump []byte) {
	script := docScript(t)
	out := testkit.SafeDir(t)
	u, _ := url.Parse(n.srv.Endpoint)
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "S3_HOST="+u.Host, "ACCESS_KEY="+n.target.AccessKeyID, "SECRET_KEY="+n.target.SecretAccessKey,
		"BUCKET="+n.target.Bucket, "PREFIX="+n.target.Prefix, "NODE="+n.id, "KEY="+n.recoveryKey, "OUT="+out, "S3_SSL=--no-ssl",
		"PGHOST="+n.pg.Host, "PGUSER="+n.pg.User, fmt.Sprintf("PGPORT=%d", max(n.pg.Port, 5432)))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		t.Fatalf("the restore by hand: %v\n%s", err, log.String())
	}
	t.Cleanup(func() { backuptest.DropDatabase(t, n.pg, "restored_"+n.db) })
	sameTree(t, n.data, filepath.Join(out, "files", strings.TrimPrefix(n.data, "/")))
	if got := backuptest.Dump(t, n.pg, "restored_"+n.db); !bytes.Equal(got, wantDump) {
		t.Fatal("the database restored by hand is not the database backed up")
	}
}

// docScript is the procedure's shell block of docs/backup-restore-by-hand.md: the test runs exactly
// what the document says.
func docScript(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "backup-restore-by-hand.md"))
	must(t, err)
	_, rest, ok := strings.Cut(string(doc), "## The procedure")
	if !ok {
		t.Fatal("the document has no procedure")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	script, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the procedure has no shell block")
	}
	return script
}

// holdingProxy forwards requests to versitygw, except the first one hold picks, which it holds open
// (after reading part of its body) until the client goes away. It reports that request held only once
// every request forwarded before it has been answered: the client uploads in parallel, and a kill at
// the held one must not also cut an earlier one short.
type holdingProxy struct {
	*httptest.Server
	held chan struct{}

	forwarding sync.RWMutex // read-held while a request is forwarded
}

// nthPut picks the n-th PUT.
func nthPut(n int32) func(*http.Request) bool {
	var puts atomic.Int32
	return func(r *http.Request) bool { return r.Method == http.MethodPut && puts.Add(1) == n }
}

// getOf picks the GET of key.
func getOf(key string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+key)
	}
}

func newHoldingProxy(t *testing.T, target string, hold func(*http.Request) bool) *holdingProxy {
	t.Helper()
	u, err := url.Parse(target)
	must(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &holdingProxy{held: make(chan struct{})}
	var once sync.Once
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		picked := false
		if hold(r) {
			once.Do(func() { picked = true })
		}
		if picked {
			_, _ = io.CopyN(io.Discard, r.Body, 64<<10)
			p.forwarding.Lock() // every request forwarded so far has been answered
			p.forwarding.Unlock()
			close(p.held)
			// The server notices a client gone only once the body is read: read the rest (it fails
			// when the client dies), then hold the answer until the connection is gone.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		p.forwarding.RLock()
		defer p.forwarding.RUnlock()
		rp.ServeHTTP(w, r) // the Host header stays the proxy's, the one the requests were signed for
	}))
	t.Cleanup(p.Close)
	return p
}

// sameTree compares two trees: names, types, content, permission bits, file times, link targets.
func sameTree(t *testing.T, want, got string) {
	t.Helper()
	count := func(dir string) int {
		n := 0
		_ = filepath.WalkDir(dir, func(string, fs.DirEntry, error) error { n++; return nil })
		return n
	}
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		must(t, err)
		rel, _ := filepath.Rel(want, p)
		wi, _ := os.Lstat(p)
		gi, err := os.Lstat(filepath.Join(got, rel))
		if err != nil {
			t.Errorf("%s: missing after restore", rel)
			return nil
		}
		if wi.Mode() != gi.Mode() {
			t.Errorf("%s: mode %v, want %v", rel, gi.Mode(), wi.Mode())
		}
		switch {
		case wi.Mode().IsRegular():
			a, _ := os.ReadFile(p)
			b, _ := os.ReadFile(filepath.Join(got, rel))
			if !bytes.Equal(a, b) {
				t.Errorf("%s: content differs", rel)
			}
			if !wi.ModTime().Truncate(time.Second).Equal(gi.ModTime().Truncate(time.Second)) {
				t.Errorf("%s: mtime %v, want %v", rel, gi.ModTime(), wi.ModTime())
			}
		case wi.Mode().Type() == fs.ModeSymlink:
			a, _ := os.Readlink(p)
			b, _ := os.Readlink(filepath.Join(got, rel))
			if a != b {
				t.Errorf("%s: link to %q, want %q", rel, b, a)
			}
		}
		return nil
	})
	must(t, err)
	if a, b := count(want), count(got); a != b {
		t.Errorf("the restored tree has %d entries, the original %d", b, a)
	}
}

func run(t *testing.T, wantExit int, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	exit := 0
	if ee, ok := err.(*exec.ExitError); ok {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if exit != wantExit {
		t.Fatalf("%s %s: exit %d, want %d\nstdout: %s\nstderr: %s", filepath.Base(name), strings.Join(args, " "), exit, wantExit, out, stderr.String())
	}
	return out
}

func psql(t *testing.T, pg *backup.Postgres, db, sql string) {
	t.Helper()
	if out, err := backuptest.Psql(pg, db, sql); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, p string, b []byte, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, b, mode))
	must(t, os.Chmod(p, mode))
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
