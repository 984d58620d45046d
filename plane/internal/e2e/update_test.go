package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// Self-update tests: real agent binaries built from this source with different version stamps (and,
// for the broken ones, a test-only fault stamped in with -X that no release build sets), run under a
// small supervisor that restarts them as systemd's Restart=always does, with the guard as
// ExecStartPre. They wait on log lines, never on time.

// agentBuilds caches the agent binaries the tests build, by version, fault and architecture.
var agentBuilds = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// buildAgent builds lexicon-agent stamped with version (and a test fault), reproducibly, for arch.
func buildAgent(t testing.TB, version, fault, arch string) string {
	t.Helper()
	agentBuilds.Lock()
	defer agentBuilds.Unlock()
	key := version + "/" + fault + "/" + arch
	if p, ok := agentBuilds.m[key]; ok {
		return p
	}
	out := filepath.Join(bin, "agents", strings.NewReplacer("/", "_", ":", "_").Replace(key), "lexicon-agent")
	ldflags := "-X github.com/lexicon-fleet/lexicon/agent.Version=" + version
	if fault != "" {
		ldflags += " -X github.com/lexicon-fleet/lexicon/agent.TestFault=" + fault
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, "./agent/cmd/lexicon-agent")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building agent %s: %v\n%s", key, err, b)
	}
	agentBuilds.m[key] = out
	return out
}

// supervisor runs an installed agent as the systemd unit would: the unit's own ExecStartPre and
// ExecStart lines (read from the unit the release ships, its paths pointed at this agent's), started
// again whenever it exits (Restart=always). As systemd, a failing ExecStartPre fails the start unless
// its path is prefixed "-", and a "-" line whose executable is missing is skipped. Every process's
// stderr goes to log.
type supervisor struct {
	t     testing.TB
	pre   []unitCommand
	start unitCommand
	log   *testkit.Buffer

	mu      sync.Mutex
	cur     *exec.Cmd
	stopped bool
	done    chan struct{}
}

// updateRunFlags are the short trial and expiry checks the tests run agents with.
var updateRunFlags = []string{"--update-trial", "3s", "--update-trial-deadline", "25s", "--statement-check", "1s"}

// install copies binary to the agent's own bin folder: the path the supervisor starts and the agent
// replaces.
func (a *agent) install(binary string) string {
	t := a.f.t
	exe := filepath.Join(a.f.dir, "agents", a.name, "bin", "lexicon-agent")
	must(t, os.MkdirAll(filepath.Dir(exe), 0o755))
	data, err := os.ReadFile(binary)
	must(t, err)
	must(t, os.WriteFile(exe, data, 0o755))
	return exe
}

// unitCommand is one Exec line of the unit.
type unitCommand struct {
	argv    []string
	mayFail bool // "-": its failure does not fail the start
}

// unitCommands reads the agent's unit and returns its ExecStartPre and ExecStart lines for this agent:
// the unit's binary, state and config paths become exe and the agent's folders, and flags are added
// to each line.
func (a *agent) unitCommands(exe string, flags []string) (pre []unitCommand, start unitCommand) {
	t := a.f.t
	unit, err := os.ReadFile(filepath.Join(root, "agent", "cmd", "lexicon-agent", "lexicon-agent.service"))
	must(t, err)
	paths := strings.NewReplacer("/usr/local/bin/lexicon-agent", exe, "/var/lib/lexicon-agent", a.state, "/etc/lexicon-agent", a.config)
	for _, line := range strings.Split(string(unit), "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok || (key != "ExecStartPre" && key != "ExecStart") {
			continue
		}
		c := unitCommand{}
		if rest, ok := strings.CutPrefix(value, "-"); ok {
			c.mayFail, value = true, rest
		}
		c.argv = append(strings.Fields(paths.Replace(value)), flags...)
		if key == "ExecStart" {
			start = c
		} else {
			pre = append(pre, c)
		}
	}
	if len(start.argv) == 0 || len(pre) == 0 {
		t.Fatalf("the agent's unit has no ExecStart or no ExecStartPre:\n%s", unit)
	}
	return pre, start
}

// supervise starts the agent's installed binary under a supervisor.
func (a *agent) supervise(exe string, flags ...string) *supervisor {
	if flags == nil {
		flags = updateRunFlags
	}
	pre, start := a.unitCommands(exe, flags)
	s := &supervisor{t: a.f.t, pre: pre, start: start, log: &testkit.Buffer{}, done: make(chan struct{})}
	go s.loop()
	a.f.t.Cleanup(func() {
		s.stop()
		if a.f.t.Failed() {
			a.f.t.Logf("%s supervised log:\n%s", a.name, s.log.String())
		}
	})
	return s
}

func (s *supervisor) loop() {
	defer close(s.done)
	for n := 1; ; n++ {
		failed := false
		for _, c := range s.pre {
			pre := exec.Command(c.argv[0], c.argv[1:]...)
			pre.Stderr = s.log
			err := pre.Run()
			fmt.Fprintf(s.log, "supervisor: start %d: ExecStartPre %s ended: %v\n", n, filepath.Base(c.argv[0]), err)
			if err != nil && !c.mayFail {
				failed = true
				break
			}
		}
		cmd := exec.Command(s.start.argv[0], s.start.argv[1:]...)
		pipe, err := cmd.StderrPipe()
		if err != nil {
			panic(err)
		}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		if !failed {
			err = cmd.Start()
			s.cur = cmd
		}
		s.mu.Unlock()
		if failed {
			fmt.Fprintf(s.log, "supervisor: start %d failed in ExecStartPre\n", n)
		} else if err != nil {
			fmt.Fprintf(s.log, "supervisor: start %d failed: %v\n", n, err)
		} else {
			fmt.Fprintf(s.log, "supervisor: start %d pid %d\n", n, cmd.Process.Pid)
			sc := bufio.NewScanner(pipe)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				_, _ = s.log.Write([]byte(sc.Text() + "\n"))
			}
			err = cmd.Wait()
			fmt.Fprintf(s.log, "supervisor: start %d exited: %v\n", n, err)
		}
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		if stopped {
			return
		}
		time.Sleep(100 * time.Millisecond) // RestartSec, shortened
	}
}

// kill ends the running start at once, as a crash or the OOM killer would; the supervisor restarts it.
func (s *supervisor) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && s.cur.Process != nil {
		_ = s.cur.Process.Kill()
	}
}

func (s *supervisor) stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.stopped = true
	if s.cur != nil && s.cur.Process != nil {
		_ = s.cur.Process.Signal(syscall.SIGTERM)
	}
	s.mu.Unlock()
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		s.kill()
		<-s.done
	}
}

// enrolSupervised joins and approves a node, installs binary as its agent and starts it supervised,
// waiting until the plane has its first claim.
func (f *fleet) enrolSupervised(name, policy, binary string, flags ...string) (*agent, *supervisor) {
	a := f.newAgent(name, policy)
	a.join()
	a.approve()
	s := a.supervise(a.install(binary), flags...)
	f.planeLog.WaitFor(f.t, `"msg":"node took a statement","node":"`+a.nodeID+`"`)
	return a, s
}

// publishAgentRelease builds and publishes a release with the fleet's modules, pinning binary as the
// linux/amd64 agent, and deploys it to every node; version is the release's (and so the agent's)
// version.
func (f *fleet) publishAgentRelease(version string, seq int, binary string, extra ...string) string {
	f.t.Helper()
	out := filepath.Join(f.dir, fmt.Sprintf("release-%d", seq))
	args := []string{"build", "--key", f.keyFile, "--modules", f.modules, "--release", version, "--sequence", fmt.Sprint(seq), "--out", out}
	if binary != "" {
		args = append(args, "--agent", "linux/amd64="+binary)
	}
	run(f.t, false, "lexicon-release", append(args, extra...)...)
	// Publishing offers a release; --deploy-all starts the rollout that moves every node's target to it.
	f.lexicon(false, "releases", "publish", "--deploy-all", out)
	return out
}

// updateState is the start of the line the plane logs when a node's reported update changes.
func updateState(node, version, state string) string {
	return `"msg":"node update state","node":"` + node + `","version":"` + version + `","state":"` + state + `"`
}

func nodeUpdate(f *fleet, node string) map[string]any {
	n := f.lexicon(false, "nodes", "show", node)
	u, _ := n["update"].(map[string]any)
	return u
}

// TestAgentUpdateTrialAndRollback: v1 updates to v2 within a claim cycle without losing or repeating a
// job; v3 that dies at start, v3' that never claims and v3.0.2 whose guard and run both fail are each
// rolled back to v2, rejected, never installed again, under one incident; v4 is then taken and the
// incident clears.
func TestAgentUpdateTrialAndRollback(t *testing.T) {
	v1, v2 := buildAgent(t, "1.0.0", "", "amd64"), buildAgent(t, "2.0.0", "", "amd64")
	v3, v3h, v4 := buildAgent(t, "3.0.0", "crash", "amd64"), buildAgent(t, "3.0.1", "hang", "amd64"), buildAgent(t, "4.0.0", "", "amd64")
	f := newFleet(t, "sqlite", fleetOptions{claimWait: "2s", serveArgs: []string{"--reconcile-every", "1s"}})
	a, s := f.enrolSupervised("upd-1", acceptLookAndChange, v1)

	// v2: jobs queued while the update happens each run exactly once.
	f.publishAgentRelease("2.0.0", 2, v2)
	var jobs []string
	for range 3 {
		jobs = append(jobs, f.lexicon(false, "jobs", "run", a.nodeID, "host_report")["id"].(string))
	}
	f.planeLog.WaitFor(t, updateState(a.nodeID, "2.0.0", "trial"))
	f.planeLog.WaitFor(t, updateState(a.nodeID, "2.0.0", "current"))
	for _, id := range jobs {
		f.planeLog.WaitFor(t, jobLogged("job finished", id))
		if j := f.job(id); j["state"] != "completed" {
			t.Fatalf("job %s across the swap: %v", id, j)
		}
		if n := strings.Count(f.planeLog.String(), jobLogged("job handed out", id)); n != 1 {
			t.Fatalf("job %s handed out %d times", id, n)
		}
	}

	// v3 dies at once in run: the guard rolls it back on the next start.
	f.publishAgentRelease("3.0.0", 3, v3)
	f.planeLog.WaitFor(t, updateState(a.nodeID, "2.0.0", "rejected"))
	f.planeLog.WaitFor(t, `"msg":"incident opened"`)
	if inc := f.incidentsOf(a.name); len(inc) != 1 || inc[0]["source"] != "plane:agent_update_refused" {
		t.Fatalf("incidents after v3: %v", inc)
	}
	u := nodeUpdate(f, a.nodeID)
	if u["offered"] != "3.0.0" || !strings.Contains(fmt.Sprint(u["history"]), "rolled_back") {
		t.Fatalf("update after v3: %v", u)
	}
	// Never installed again: further claims do not fetch it.
	mark := len(s.log.String())
	f.planeLog.WaitFor(t, `"msg":"job finished","job":"`+f.lexicon(false, "jobs", "run", a.nodeID, "host_report")["id"].(string))
	if strings.Contains(s.log.String()[mark:], `"agent update: fetching"`) {
		t.Fatalf("a rejected version was fetched again:\n%s", s.log.String()[mark:])
	}

	// v3' hangs without claiming: the trial deadline ends it and the next start rolls it back.
	f.publishAgentRelease("3.0.1", 4, v3h)
	f.planeLog.WaitFor(t, `"offered":"3.0.1"`)
	s.log.WaitFor(t, "test fault: this agent never claims")
	s.log.WaitFor(t, `"rejected":"3.0.1","to":"2.0.0"`)
	f.planeLog.WaitFor(t, `"version":"2.0.0","state":"rejected","offered":"3.0.1"`)
	if inc := f.incidentsOf(a.name); len(inc) != 1 {
		t.Fatalf("one incident while the node refuses, got %v", inc)
	}

	// v3.0.2 answers version (so its probe passes) but neither its guard nor its run starts: the known-good
	// binary's guard, not the binary on trial, rolls it back, and the plane is told.
	v3n := buildAgent(t, "3.0.2", "nostart", "amd64")
	f.publishAgentRelease("3.0.2", 5, v3n)
	f.planeLog.WaitFor(t, `"offered":"3.0.2"`)
	s.log.WaitFor(t, `"rejected":"3.0.2","to":"2.0.0"`)
	f.planeLog.WaitFor(t, `"version":"2.0.0","state":"rejected","offered":"3.0.2"`)
	if u := nodeUpdate(f, a.nodeID); !strings.Contains(fmt.Sprint(u["history"]), "3.0.2 did not end its trial") {
		t.Fatalf("update after v3.0.2: %v", u)
	}
	if j := f.runJob(a.nodeID, "host_report"); j["state"] != "completed" {
		t.Fatalf("job after v3.0.2 was rolled back: %v", j)
	}

	// v4 supersedes the rejections; the node reports current and the incident clears.
	f.publishAgentRelease("4.0.0", 6, v4)
	f.planeLog.WaitFor(t, updateState(a.nodeID, "4.0.0", "current"))
	f.planeLog.WaitFor(t, `"msg":"incident cleared"`)
	if j := f.runJob(a.nodeID, "host_report"); j["state"] != "completed" {
		t.Fatalf("job on v4: %v", j)
	}
	list := f.lexicon(false, "nodes", "list")
	n := list["nodes"].([]any)[0].(map[string]any)
	if n["agent_version"] != "4.0.0" || n["releases_behind"].(float64) != 0 || n["update"].(map[string]any)["state"] != "current" {
		t.Fatalf("nodes list after v4: %v", n)
	}
}

// TestAgentUpdateRefusesBadBinaries: bytes that differ from the pin are verify_failed and a binary for
// another platform probe_failed; nothing is swapped, and the plane answers artifact.not_pinned for a
// platform the statement does not pin.
func TestAgentUpdateRefusesBadBinaries(t *testing.T) {
	v1, v2 := buildAgent(t, "1.0.0", "", "amd64"), buildAgent(t, "2.0.0", "", "amd64")
	arm := buildAgent(t, "2.0.1", "", "arm64")
	f := newFleet(t, "sqlite", fleetOptions{claimWait: "2s"})
	off := `{"classes": {"look": "accept", "change": "accept", "destructive": "refuse"}, "update": "off"}`
	a, s := f.enrolSupervised("upd-2", off, v1)
	exe := filepath.Join(f.dir, "agents", a.name, "bin", "lexicon-agent")
	before := fileSum(t, exe)

	// The plane's copy is altered after publishing, while the node has updates off; then they go on.
	data, err := os.ReadFile(v2)
	must(t, err)
	f.publishAgentRelease("2.0.0", 2, v2)
	tamper(t, "sqlite", f.store, cas.Sum(data))
	must(t, os.WriteFile(filepath.Join(a.config, "policy.json"), []byte(acceptLookAndChange), 0o644))
	f.planeLog.WaitFor(t, updateState(a.nodeID, "1.0.0", "verify_failed"))
	if fileSum(t, exe) != before || strings.Contains(s.log.String(), "agent update step") {
		t.Fatal("a binary that failed verification was staged or swapped")
	}

	f.publishAgentRelease("2.0.1", 3, arm)
	f.planeLog.WaitFor(t, updateState(a.nodeID, "1.0.0", "probe_failed"))
	if fileSum(t, exe) != before {
		t.Fatal("a binary for another platform was swapped in")
	}
	if u := nodeUpdate(f, a.nodeID); u["offered"] != "2.0.1" || !strings.Contains(fmt.Sprint(u["reason"]), "agent.update_refused") {
		t.Fatalf("update after the arm64 binary: %v", u)
	}

	// The plane serves agents only as pinned artifacts.
	key := filepath.Join(a.state, "node.key")
	got := signedGet(t, f, key, "/api/v1/agent/artifact?agent=linux-riscv64")
	if got != "artifact.not_pinned" {
		t.Fatalf("unpinned platform: %s", got)
	}
}

func fileSum(t testing.TB, path string) string {
	data, err := os.ReadFile(path)
	must(t, err)
	return cas.Sum(data)
}

// TestAgentUpdateSurvivesKills kills the old agent after each step of the swap (fetch, probe, rename)
// and the new one during its trial (the plane having heard "probing" from those past the fetch):
// every machine starts a working agent again and ends on v2 or v4 (v4 still on trial: the trial's own
// ending is TestAgentUpdateTrialAndRollback's).
func TestAgentUpdateSurvivesKills(t *testing.T) {
	v2, v4 := buildAgent(t, "2.0.0", "pause", "amd64"), buildAgent(t, "4.0.0", "", "amd64")
	f := newFleet(t, "sqlite", fleetOptions{claimWait: "2s"})
	steps := []string{"fetch", "probe", "rename", "trial"}
	agents := map[string]*agent{}
	sups := map[string]*supervisor{}
	for _, step := range steps {
		// A long trial: the nodes killed before the swap end on v4 still on trial, and the one killed on
		// trial cannot pass it before the kill.
		a, s := f.enrolSupervised("kill-"+step, acceptLookAndChange, v2, "--update-trial", "10m", "--update-trial-deadline", "15m")
		if step != "trial" {
			must(t, os.WriteFile(filepath.Join(a.state, "update", "test-pause"), []byte(step), 0o600))
		}
		agents[step], sups[step] = a, s
	}
	f.publishAgentRelease("4.0.0", 2, v4)
	for _, step := range steps {
		s := sups[step]
		if step == "trial" {
			s.log.WaitFor(t, `"msg":"update trial started"`)
		} else {
			s.log.WaitFor(t, `"msg":"agent update paused for the test"`)
		}
		if step == "probe" || step == "rename" {
			// Past the fetch, the agent told the plane it was probing before the probe ran.
			f.planeLog.WaitFor(t, updateState(agents[step].nodeID, "2.0.0", "probing"))
		}
		s.kill()
	}
	for _, step := range steps {
		a := agents[step]
		want := "4.0.0"
		if step == "trial" {
			// Killed on trial, the next start rolls back to v2 and rejects v4.
			want = "2.0.0"
			f.planeLog.WaitFor(t, updateState(a.nodeID, "2.0.0", "rejected"))
		} else {
			f.planeLog.WaitFor(t, updateState(a.nodeID, "4.0.0", "trial"))
		}
		if j := f.runJob(a.nodeID, "host_report"); j["state"] != "completed" {
			t.Fatalf("%s: job after the kill: %v", step, j)
		}
		n := f.lexicon(false, "nodes", "show", a.nodeID)
		if n["agent_version"] != want {
			t.Fatalf("killed after %s: the node runs %v, want %s", step, n["agent_version"], want)
		}
	}
}

// TestStatementFloor: a statement whose floor is above the running agent is held back, its new word
// refused with job.needs_newer_agent, until the agent has updated itself; with update off the node
// says why it does not.
func TestStatementFloor(t *testing.T) {
	v1, v2 := buildAgent(t, "1.0.0", "", "amd64"), buildAgent(t, "2.0.0", "", "amd64")
	f := newFleet(t, "sqlite", fleetOptions{claimWait: "2s"})
	off := `{"classes": {"look": "accept", "change": "accept", "destructive": "refuse"}, "update": "off"}`
	a, _ := f.enrolSupervised("floor-1", off, v1)

	hello, err := os.ReadFile(filepath.Join(root, "examples", "word-hello", "manifest.json"))
	must(t, err)
	stage(t, f.modules, "hello", hello, filepath.Join(root, "build", "wasm", "examples", "hello.wasm"), "hello.wasm")
	f.publishAgentRelease("2.0.0", 2, v2, "--floor", "2.0.0")
	f.planeLog.WaitFor(t, `"node":"`+a.nodeID+`","version":"1.0.0","state":"none","offered":"","needs_newer_agent":"2.0.0"`)
	u := nodeUpdate(f, a.nodeID)
	if !strings.Contains(fmt.Sprint(u["reason"]), "update: off") {
		t.Fatalf("update off: %v", u)
	}
	n := f.lexicon(false, "nodes", "show", a.nodeID)
	if n["below_floor"] != true || n["statement_sequence"].(float64) != 1 {
		t.Fatalf("a node below the floor: %v", n)
	}
	word := "hello"
	if got := f.lexicon(true, "jobs", "run", a.nodeID, word); got["code"] != "job.needs_newer_agent" {
		t.Fatalf("job for the new word: %v", got)
	}

	// Turn updates on: the node updates, then takes the vocabulary.
	must(t, os.WriteFile(filepath.Join(a.config, "policy.json"), []byte(acceptLookAndChange), 0o644))
	f.planeLog.WaitFor(t, updateState(a.nodeID, "2.0.0", "current"))
	f.planeLog.WaitFor(t, `"msg":"node took a statement","node":"`+a.nodeID+`","sequence":2`)
	if j := f.runJob(a.nodeID, word, "name=floor"); j["state"] != "completed" {
		t.Fatalf("the new word after the update: %v", j)
	}
}

// TestStatementFreeze: a statement built with a short expiry stops jobs once expired, the node reports
// itself untrusted with statement.expired, and the renewed statement restores it.
func TestStatementFreeze(t *testing.T) {
	v1 := buildAgent(t, "1.0.0", "", "amd64")
	f := newFleet(t, "sqlite", fleetOptions{claimWait: "2s"})
	a, s := f.enrolSupervised("freeze-1", acceptLookAndChange, v1)
	short := f.publishAgentRelease("1.0.0", 2, "", "--expires", "15s")
	f.planeLog.WaitFor(t, `"msg":"node took a statement","node":"`+a.nodeID+`","sequence":2`)
	s.log.WaitFor(t, `"msg":"statement expired: jobs and repairs are refused until a renewed statement arrives"`)
	f.planeLog.WaitFor(t, `"msg":"node cannot verify the plane's statement","node":"`+a.nodeID+`","reason":"statement.expired`)
	j := f.runJob(a.nodeID, "host_report")
	if j["state"] != "refused" || j["outcome_code"] != "statement.expired" {
		t.Fatalf("job on a frozen node: %v", j)
	}
	renewed := filepath.Join(f.dir, "renewed")
	run(t, false, "lexicon-release", "renew", "--key", f.keyFile, "--previous", short, "--sequence", "3", "--out", renewed)
	f.lexicon(false, "releases", "publish", "--deploy-all", renewed)
	f.planeLog.WaitFor(t, `"msg":"node took a statement","node":"`+a.nodeID+`","sequence":3`)
	if j := f.runJob(a.nodeID, "host_report"); j["state"] != "completed" {
		t.Fatalf("job after the renewal: %v", j)
	}
	if n := f.lexicon(false, "nodes", "show", a.nodeID); n["untrusted"] != nil && n["untrusted"] != "" {
		t.Fatalf("still untrusted after the renewal: %v", n["untrusted"])
	}
}

// signedGet sends a GET signed with the node key at keyFile and returns the error code of the answer
// ("" for 200).
func signedGet(t *testing.T, f *fleet, keyFile, path string) string {
	t.Helper()
	key, err := keys.ReadNodePrivateFile(keyFile)
	must(t, err)
	req, err := http.NewRequest(http.MethodGet, f.url+path, nil)
	must(t, err)
	must(t, httpsig.Sign(req, nil, key, time.Now()))
	resp, err := planeClient(t, f.ca).Do(req)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return ""
	}
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return code(m)
}
