package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// spinManifest describes a test word built by `make wasm` (host/wasm/testdata/evil) that can spin until
// its deadline: the job that is running when its agent is killed.
const spinManifest = `{"schema": "lexicon/manifest/v1", "name": "e2e_spin", "kind": "word", "version": "1.0.0", "class": "look",
  "summary": "Spins or sleeps on request (end-to-end tests).",
  "params": {"type": "object", "additionalProperties": false, "properties": {"attack": {"type": "string", "enum": ["loop", "sleep", "counter"]}}, "required": ["attack"]},
  "output": {"type": "object"}, "limits": {"wall_time_ms": 120000}, "module": {"file": "e2e_spin.wasm"}}`

// fleet is a publisher, a plane with its store, and an admin token: everything but the agents.
type fleet struct {
	t         testing.TB
	dir       string
	keyFile   string
	pubFile   string
	modules   string
	store     string
	planeData string
	plane     *proc
	planeLog  *testkit.Buffer // every plane process's log, replicas' too
	url, ca   string
	metrics   string // the plane's --metrics-listen address, when serveArgs ask for one
	tokenFile string
	serveArgs []string
	listen    string // the address startPlane listens on; "" for a free loopback port
}

type fleetOptions struct {
	store     string // a store URL shared with another plane, or "" for a fresh one
	claimWait string
	serveArgs []string         // more flags for lexicon-plane serve
	stage     func(dir string) // stages more modules into the release's modules folder
	listen    string           // the address the plane listens on; "" for a free loopback port
}

func newFleet(t testing.TB, backend string, o fleetOptions) *fleet {
	t.Helper()
	f := &fleet{t: t, dir: t.TempDir(), planeLog: &testkit.Buffer{}}
	f.keyFile, f.pubFile = filepath.Join(f.dir, "keys", "publisher.key"), filepath.Join(f.dir, "keys", "publisher.pub")
	run(t, false, "lexicon-release", "keygen", "--out", filepath.Join(f.dir, "keys"))
	f.modules = stageModules(t, filepath.Join(f.dir, "modules"))
	if o.stage != nil {
		o.stage(f.modules)
	}
	f.serveArgs, f.listen = o.serveArgs, o.listen
	release := filepath.Join(f.dir, "release")
	run(t, false, "lexicon-release", "build", "--key", f.keyFile, "--modules", f.modules, "--release", "1.0.0", "--sequence", "1", "--out", release)
	f.store = o.store
	if f.store == "" {
		f.store = storeURL(t, backend)
	}
	f.planeData = filepath.Join(f.dir, "plane")
	run(t, false, "lexicon-release", "trust", "init", "--out", filepath.Join(f.planeData, "trust"), "--key", f.pubFile)
	f.startPlane(o.claimWait)
	tok := runJSON(t, false, "lexicon-plane", "token", "create", "--role", "admin", "--name", "e2e-admin", "--data", f.planeData, "--db", f.store)
	f.tokenFile = filepath.Join(f.dir, "admin.token")
	must(t, os.WriteFile(f.tokenFile, []byte(tok["token"].(string)+"\n"), 0o600))
	f.lexicon(false, "releases", "publish", release)
	return f
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// startPlane starts lexicon-plane on a free loopback port and reads its ready line.
func (f *fleet) startPlane(claimWait string) {
	t := f.t
	listen := "127.0.0.1:0"
	if f.listen != "" {
		listen = f.listen
	}
	args := []string{"serve", "--listen", listen, "--data", f.planeData, "--db", f.store, "-o", "json"}
	args = append(args, f.serveArgs...)
	if claimWait != "" {
		args = append(args, "--claim-wait", claimWait)
	}
	p, stdout := startTee(t, f.planeLog, "lexicon-plane", args...)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("plane did not start: %v\n%s", err, p.log())
	}
	var ready struct{ URL, CA, Metrics string }
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		t.Fatalf("plane ready line %q: %v", line, err)
	}
	f.plane, f.url, f.ca, f.metrics = p, ready.URL, ready.CA, ready.Metrics
	if h, port, err := net.SplitHostPort(strings.TrimPrefix(f.url, "https://")); err == nil && net.ParseIP(h).IsUnspecified() {
		f.url = "https://" + net.JoinHostPort("127.0.0.1", port) // on every address; the CLI asks on loopback, which the certificate names
	}
}

// lexicon runs the admin CLI against the fleet's plane.
func (f *fleet) lexicon(wantFail bool, args ...string) map[string]any {
	f.t.Helper()
	return runJSON(f.t, wantFail, "lexicon", append(args, "--plane", f.url, "--ca", f.ca, "--token-file", f.tokenFile)...)
}

// stageModules lays out module folders for lexicon-release build: the built-in words built by
// `make wasm`, and the e2e spin word.
func stageModules(t testing.TB, dir string) string {
	t.Helper()
	for _, name := range []string{"host_report", "disk_usage"} {
		m, err := os.ReadFile(filepath.Join(root, "primitives", name, "manifest.json"))
		must(t, err)
		stage(t, dir, name, m, filepath.Join(root, "build", "wasm", name+".wasm"), name+".wasm")
	}
	stage(t, dir, "e2e_spin", []byte(spinManifest), filepath.Join(root, "build", "wasm", "testdata", "evil.wasm"), "e2e_spin.wasm")
	return dir
}

func stage(t testing.TB, dir, name string, manifest []byte, artifact, file string) {
	t.Helper()
	data, err := os.ReadFile(artifact)
	if err != nil {
		t.Fatalf("%s is missing: run `make wasm` (make test does) first: %v", artifact, err)
	}
	d := filepath.Join(dir, name)
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, "manifest.json"), manifest, 0o644))
	must(t, os.WriteFile(filepath.Join(d, file), data, 0o644))
}

// agent is one lexicon-agent with its own state and config folders.
type agent struct {
	f                   *fleet
	name                string
	state, config       string
	joinID, fingerprint string
	nodeID              string
	p                   *proc
	runArgs             []string // more flags for lexicon-agent run
}

// AcceptLookAndChange is the policy most tests give their nodes.
const acceptLookAndChange = `{"classes": {"look": "accept", "change": "accept", "destructive": "refuse"}}`

// newAgent prepares an agent's folders: its policy and a trust folder holding the publisher's key.
func (f *fleet) newAgent(name, policy string) *agent {
	t := f.t
	a := &agent{f: f, name: name, state: filepath.Join(f.dir, "agents", name, "state"), config: filepath.Join(f.dir, "agents", name, "config")}
	must(t, os.MkdirAll(a.config, 0o755))
	must(t, os.WriteFile(filepath.Join(a.config, "policy.json"), []byte(policy), 0o644))
	run(t, false, "lexicon-release", "trust", "init", "--out", filepath.Join(a.config, "trust"), "--key", f.pubFile)
	return a
}

func (a *agent) dirs() []string { return []string{"--state-dir", a.state, "--config-dir", a.config} }

// join asks the plane to pair, without waiting.
func (a *agent) join() {
	a.f.t.Helper()
	res := runJSON(a.f.t, false, "lexicon-agent", append([]string{"join", "--plane", a.f.url, "--ca", a.f.ca, "--name", a.name, "--no-wait"}, a.dirs()...)...)
	a.joinID, a.fingerprint = res["join_id"].(string), res["fingerprint"].(string)
}

// approve approves the join through the admin CLI with the fingerprint the agent printed, and lets the
// agent learn the outcome.
func (a *agent) approve() {
	a.f.t.Helper()
	res := a.f.lexicon(false, "joins", "approve", a.joinID, "--fingerprint", a.fingerprint)
	a.nodeID = res["node"].(map[string]any)["id"].(string)
	st := runJSON(a.f.t, false, "lexicon-agent", append([]string{"status"}, a.dirs()...)...)
	if st["status"] != "approved" || st["node_id"] != a.nodeID {
		a.f.t.Fatalf("agent status after approval: %v", st)
	}
}

// start runs the agent daemon and waits until the plane has its vocabulary: the line a plane logs when
// a node reports a statement it had not reported before (in any of the fleet's planes, so an agent
// restarted after a plane restart finds the line its first start left).
func (a *agent) start() {
	a.f.t.Helper()
	a.p, _ = start(a.f.t, "lexicon-agent", append(append([]string{"run"}, a.dirs()...), a.runArgs...)...)
	a.f.planeLog.WaitFor(a.f.t, `"msg":"node took a statement","node":"`+a.nodeID+`"`)
	n := a.f.lexicon(false, "nodes", "show", a.nodeID)
	if v, _ := n["vocabulary"].([]any); len(v) == 0 {
		a.f.t.Fatalf("%s took a statement but the plane holds no vocabulary for it: %v", a.name, n)
	}
}

// enrol is join, approve and start.
func (f *fleet) enrol(name, policy string) *agent {
	a := f.newAgent(name, policy)
	a.join()
	a.approve()
	a.start()
	return a
}

// runJob queues a word and waits for the job to finish, returning the job.
// runJob runs a word with jobs run --wait and returns the final job, failing the test unless the exit
// status is the one the CLI documents for the job's final state.
func (f *fleet) runJob(node, word string, params ...string) map[string]any {
	f.t.Helper()
	args := []string{"jobs", "run", node, word, "--wait"}
	for _, p := range params {
		args = append(args, "--param", p)
	}
	job, status := f.lexiconStatus(args...)
	f.wantJobStatus(job, status)
	return job
}

// jobExit is the exit status of jobs run --wait and jobs watch for each final state (the CLI's doc).
var jobExit = map[string]int{"completed": 0, "failed": 4, "refused": 5, "lost": 6, "cancelled": 7}

// wantJobStatus fails the test unless status is the exit status the CLI documents for the job's state.
func (f *fleet) wantJobStatus(job map[string]any, status int) {
	f.t.Helper()
	want, ok := jobExit[fmt.Sprint(job["state"])]
	if !ok || status != want {
		f.t.Fatalf("job %v ended %v with exit status %d, want %d", job["id"], job["state"], status, want)
	}
}

// lexiconStatus runs the admin CLI with -o json and returns its answer and exit status, whatever the
// status: for the commands whose status tells how the work ended.
func (f *fleet) lexiconStatus(args ...string) (map[string]any, int) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return f.lexiconIn(ctx, args...)
}

// lexiconIn is lexiconStatus bounded by ctx.
func (f *fleet) lexiconIn(ctx context.Context, args ...string) (map[string]any, int) {
	f.t.Helper()
	args = append(args, "--plane", f.url, "--ca", f.ca, "--token-file", f.tokenFile, "-o", "json")
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "lexicon"), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		f.t.Fatalf("lexicon %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		f.t.Fatalf("lexicon %s: not JSON: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return m, cmd.ProcessState.ExitCode()
}

func (f *fleet) job(id string) map[string]any {
	return f.lexicon(false, "jobs", "show", id)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
