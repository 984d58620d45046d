package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestPatchFleetOnDebianSQLite and TestPatchFleetOnDebianPostgres patch a fleet of three real agents,
// each in its own debian-12 netns instance, on each store. They run together; each has its own range.
func TestPatchFleetOnDebianSQLite(t *testing.T) {
	t.Parallel()
	testPatchFleet(t, "sqlite", "10.213.125")
}

func TestPatchFleetOnDebianPostgres(t *testing.T) {
	t.Parallel()
	testPatchFleet(t, "postgres", "10.213.126")
}

// patchMachine is one debian-12 instance of the netns cloud and the node its agent joined as.
type patchMachine struct {
	name, id, nodeID string
	state            string // the account's state root
}

// merged is the instance's root as the host sees it (the driver mounts it in the host's namespace).
func (m patchMachine) merged() string { return filepath.Join(m.state, "rootfs", m.id, "merged") }

// upper is what the instance changed of the image.
func (m patchMachine) upper() string { return filepath.Join(m.state, "rootfs", m.id, "upper") }

// command is argv run in the instance as a root shell on it would run it: through the driver's
// helper in its exec mode (plugins/cloud/netns, "Inside an instance"), which enters the instance's
// network namespace and its own root, as the driver's own tests do.
func (m patchMachine) command(argv ...string) *exec.Cmd {
	helper := filepath.Join(m.state, "bin", "lexicon-netns-helper")
	cmd := exec.Command("ip", append([]string{"netns", "exec", "lexicon-" + m.id, "unshare", "--mount", "--uts", "--propagation", "private", helper}, argv...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
		"LEXICON_NETNS_HELPER=exec", "LEXICON_NETNS_INSTANCE=" + filepath.Join(m.state, "instances", m.id),
		"LEXICON_NETNS_ENTER=1", "LEXICON_NETNS_HOSTNAME=" + m.name}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

func (m patchMachine) run(t *testing.T, argv ...string) string {
	t.Helper()
	out, err := m.command(argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %s: %v\n%s", m.name, strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// daemonPID is the fixture daemon's main process, as the instance's service manager shows it.
func (m patchMachine) daemonPID(t *testing.T) int {
	t.Helper()
	// The instance's systemctl (the driver's shim) shows every property the host reads, -p or not.
	out := m.run(t, "systemctl", "show", apttest.DaemonUnit)
	pid := 0
	if m := regexp.MustCompile(`(?m)^MainPID=([0-9]+)$`).FindStringSubmatch(out); m != nil && strings.HasPrefix(out, "Id="+apttest.DaemonUnit+"\n") {
		pid, _ = strconv.Atoi(m[1])
	}
	if pid <= 0 {
		t.Fatalf("%s: %s's main process: %q", m.name, apttest.DaemonUnit, out)
	}
	return pid
}

// libMapping is the daemon's mapping of the fixture library, from its /proc maps: "(deleted)" at its
// end while it runs the library an upgrade replaced.
func libMapping(t *testing.T, pid int) string {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	must(t, err)
	for _, l := range strings.Split(string(maps), "\n") {
		if strings.Contains(l, "liblexfix.so.1") {
			return l
		}
	}
	t.Fatalf("process %d maps no liblexfix:\n%s", pid, maps)
	return ""
}

// staleProcesses are the pids a packages_report job found running replaced code.
func staleProcesses(t *testing.T, job map[string]any) []int {
	t.Helper()
	var out struct {
		StaleProcesses []struct {
			PID int `json:"pid"`
		} `json:"stale_processes"`
	}
	raw, _ := json.Marshal(job["output"])
	must(t, json.Unmarshal(raw, &out))
	var pids []int
	for _, p := range out.StaleProcesses {
		pids = append(pids, p.PID)
	}
	return pids
}

// dpkgLogCount counts the lines of the instance's dpkg log holding s.
func (m patchMachine) dpkgLogCount(s string) int {
	return strings.Count(readFile(filepath.Join(m.upper(), "var", "log", "dpkg.log")), s)
}

// lexiconLong is lexiconStatus for the commands that follow a rollout (--wait): bounded by the test's
// deadline rather than two minutes, since a patch of three machines runs apt on each in turn.
func (f *fleet) lexiconLong(args ...string) (map[string]any, int) {
	f.t.Helper()
	ctx := context.Background()
	if d, ok := f.t.(interface{ Deadline() (time.Time, bool) }); ok {
		if at, ok := d.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, at.Add(-5*time.Second))
			defer cancel()
		}
	}
	return f.lexiconIn(ctx, args...)
}

// securityRow is a node's row of lexicon fleet security -o json.
type securityRow struct {
	Node    string `json:"node"`
	Level   string `json:"level"`
	JobID   string `json:"job_id"`
	Reasons []struct {
		Level, Kind, Text string
	} `json:"reasons"`
}

func (r securityRow) kinds() []string {
	var out []string
	for _, why := range r.Reasons {
		out = append(out, why.Kind)
	}
	return out
}

func (r securityRow) says(kind, text string) bool {
	for _, why := range r.Reasons {
		if why.Kind == kind && strings.Contains(why.Text, text) {
			return true
		}
	}
	return false
}

// testPatchFleet is issue 25's end to end: three real agents in debian-12 instances (each its own
// overlay of the Debian root, the agent installed by the install command, packages from the local apt
// repository served on the gateway), with the fixture library's 1.0 installed and its security fix 1.1
// waiting, and the daemon linking it running.
//
//  1. The hourly packages-report schedule, fired at once by pausing and resuming it as an operator
//     would, reports every node red: the library is critical (set at run time), its fix waits. The
//     fleet security view says so on the CLI and on its web page.
//  2. fleet patch runs the canary, then the rest: each node's fix installed, the daemon left on the
//     replaced library restarted by the rollout's restart_services (the machine names its unit), and
//     the node verified by a fresh report; the view and its page turn green.
//  3. Another apt run holds the lock on one node while the plane is SIGKILLed with the canary inside
//     its dpkg run; the plane restarted on the same store resumes the patch: the locked node is
//     recorded (pkg.locked) and passed, and no node ran install_security_updates twice (the rollout's
//     jobs, and the canary's dpkg log).
//  4. A fix whose postinst fails halts the patch at the canary, naming the node and the package; no
//     other node is touched, and the next report shows the canary red with the half-done run.
func testPatchFleet(t *testing.T, backend, net24 string) {
	needNamespaces(t)
	gateway, rng := net24+".1", net24+".0/24"
	debian := apttest.DebianRoot(t)
	aptURL, keyring := serveAptRepo(t, gateway)

	// The three package words as shipped, but restart_services' allow-list gains the fixture's daemon,
	// as a site's derived release adds its own units. A short lease lets the restarted plane take the
	// patch over within seconds of the kill.
	f := netnsFleetOn(t, backend, gateway, "1.2.0", "", func(modules string) {
		for _, name := range []string{"packages_report", "install_security_updates", "restart_services"} {
			m, err := os.ReadFile(filepath.Join(root, "primitives", name, "manifest.json"))
			must(t, err)
			if name == "restart_services" {
				m = bytes.ReplaceAll(m, []byte(`"unattended-upgrades.service"]`), []byte(`"unattended-upgrades.service", "lexfix-*.service"]`))
				if !bytes.Contains(m, []byte(`"lexfix-*.service"`)) {
					t.Fatalf("restart_services' manifest has no allow-list ending with unattended-upgrades.service:\n%s", m)
				}
			}
			stage(t, modules, name, m, filepath.Join(root, "build", "wasm", name+".wasm"), name+".wasm")
		}
	}, "--rollout-every", "200ms", "--lease-ttl", "3s")
	tr := &testkit.Buffer{}
	defer func() {
		if t.Failed() {
			t.Logf("commands:\n%s", tr.String())
		}
	}()
	state := f.netnsAccount(tr, "local", rng, map[string]string{"debian-12": debian})

	// Three machines, each given its install command after its admin pointed apt at the repository
	// and installed the library's 1.0 and the daemon (whose postinst starts it).
	machines := make([]*patchMachine, 3)
	for i := range machines {
		m := &patchMachine{name: fmt.Sprintf("patch-%d", i+1), state: state}
		machines[i] = m
		ic := f.cli(tr, 0, "nodes", "install-command", "--expires", "30m")
		script := installScript(t, ic)
		apt := aptPrelude(m.name, aptURL, keyring) +
			fmt.Sprintf("apt-get install -y -q --no-install-recommends %s=1.0 %s=1.0\n", apttest.Lib, apttest.Daemon)
		text := strings.Replace(string(script), "set -eu\n", "set -eu\n"+apt, 1)
		userData := filepath.Join(f.dir, m.name+".sh")
		must(t, os.WriteFile(userData, []byte(text), 0o600))
		inst := f.cli(tr, 0, "cloud", "create", "--account", "local", "--region", "local", "--type", "ns-1", "--image", "debian-12",
			"--label", m.name, "--user-data-file", userData)
		m.id = inst["id"].(string)
	}
	for _, m := range machines {
		f.planeLog.WaitFor(t, `"name":"`+m.name+`","fingerprint"`)
	}
	for _, j := range f.cli(tr, 0, "joins", "list", "--status", "approved")["joins"].([]any) {
		j := j.(map[string]any)
		for _, m := range machines {
			if j["name"] == m.name {
				m.nodeID = j["node_id"].(string)
			}
		}
	}
	for _, m := range machines {
		if m.nodeID == "" {
			t.Fatalf("no approved join for %s", m.name)
		}
		f.planeLog.WaitFor(t, `"msg":"node took a statement","node":"`+m.nodeID+`"`)
	}
	canary := machines[0] // a patch's canary is the first selected node by name

	// The fixture library is what this fleet counts as critical: its fix waiting makes a node red.
	f.cli(tr, 0, "fleet", "critical", "set", apttest.Lib)

	// report fires the default hourly packages-report schedule now, as an operator would (a resumed
	// interval schedule fires at once), waits for each node's report and returns the fleet security
	// view by node.
	report := func(t *testing.T) map[string]securityRow {
		t.Helper()
		f.cli(tr, 0, "schedules", "pause", "packages-report")
		f.planeLog.Reset() // the plane's own log keeps every line; this one now holds only what follows
		f.cli(tr, 0, "schedules", "resume", "packages-report")
		f.planeLog.WaitFor(t, `"name":"packages-report","word":"packages_report","queued":3,"skipped":0,"failed":0`)
		jobs := map[string]string{}
		for _, m := range machines {
			list := f.cli(tr, 0, "jobs", "list", "--node", m.name, "--limit", "1")["jobs"].([]any)
			j := list[0].(map[string]any)
			if j["word"] != "packages_report" || j["created_by"] != "schedule packages-report" {
				t.Fatalf("%s's newest job is not the schedule's report: %v", m.name, j)
			}
			if job, status := f.lexiconStatus("jobs", "watch", j["id"].(string)); status != 0 {
				t.Fatalf("%s's report: exit %d: %v", m.name, status, job)
			}
			jobs[m.name] = j["id"].(string)
		}
		var view struct {
			Rows   []securityRow  `json:"rows"`
			Counts map[string]int `json:"counts"`
		}
		raw, _ := json.Marshal(f.cli(tr, 0, "fleet", "security"))
		must(t, json.Unmarshal(raw, &view))
		rows := map[string]securityRow{}
		for _, r := range view.Rows {
			rows[r.Node] = r
		}
		for _, m := range machines {
			if rows[m.name].JobID != jobs[m.name] {
				t.Fatalf("%s's row is not from the report just run (%s): %+v", m.name, jobs[m.name], rows[m.name])
			}
		}
		return rows
	}
	// page is the fleet security web page, signed in as a browser would.
	cookie := signInCookie(t, f, readFile(f.tokenFile))
	page := func(t *testing.T) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, f.url+"/ui/security", nil)
		must(t, err)
		req.Header.Set("Cookie", cookie)
		res, err := planeClient(t, f.ca).Do(req)
		must(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		must(t, err)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("/ui/security: %d\n%s", res.StatusCode, b)
		}
		return string(b)
	}
	rowLevel := func(t *testing.T, html, node string) string {
		t.Helper()
		m := regexp.MustCompile(`<tr class="security-([a-z]+)" id="security-` + regexp.QuoteMeta(node) + `">`).FindStringSubmatch(html)
		if m == nil {
			t.Fatalf("the security page has no row for %s:\n%s", node, html)
		}
		return m[1]
	}
	// rolloutJobs are the ids of m's jobs of word that rollout id queued.
	rolloutJobs := func(id string, m *patchMachine, word string) []string {
		var ids []string
		for _, j := range f.cli(tr, 0, "jobs", "list", "--node", m.name, "--limit", "200")["jobs"].([]any) {
			j := j.(map[string]any)
			if j["word"] == word && strings.Contains(fmt.Sprint(j["created_by"]), "via rollout "+id+" ") {
				ids = append(ids, j["id"].(string))
			}
		}
		return ids
	}
	// patchJobs counts each node's jobs of word that rollout id queued.
	patchJobs := func(t *testing.T, id, word string) map[string]int {
		t.Helper()
		out := map[string]int{}
		for _, m := range machines {
			if n := len(rolloutJobs(id, m, word)); n > 0 {
				out[m.name] = n
			}
		}
		return out
	}

	daemonPIDs := map[string]int{}
	if !t.Run("the hourly report shows them red", func(t *testing.T) {
		rows := report(t)
		html := page(t)
		for _, m := range machines {
			r := rows[m.name]
			if r.Level != "red" || !r.says("critical_fix", apttest.Lib) {
				t.Errorf("%s: %s %+v", m.name, r.Level, r.Reasons)
			}
			if lvl := rowLevel(t, html, m.name); lvl != "red" {
				t.Errorf("the page shows %s %s", m.name, lvl)
			}
			daemonPIDs[m.name] = m.daemonPID(t)
		}
	}) {
		return
	}

	if !t.Run("fleet patch runs canary then the rest; the daemon restarted, the page turns green", func(t *testing.T) {
		ro, status := f.lexiconLong("fleet", "patch", "--wait")
		if status != 0 || ro["state"] != "completed" || ro["purpose"] != "patch" {
			t.Fatalf("fleet patch --wait: exit %d: %v", status, ro)
		}
		steps := ro["steps"].([]any)
		if len(steps) != 3 {
			t.Fatalf("steps: %v", steps)
		}
		at := func(s any, k string) time.Time {
			v, err := time.Parse(time.RFC3339Nano, fmt.Sprint(s.(map[string]any)[k]))
			if err != nil {
				t.Fatalf("step %v: %s: %v", s, k, err)
			}
			return v
		}
		for i, s := range steps {
			s := s.(map[string]any)
			wantStage := 1.0
			if i == 0 {
				wantStage = 0
			}
			if s["node_name"] != machines[i].name || s["stage"] != wantStage || s["state"] != "passed" {
				t.Fatalf("step %d: %v", i, s)
			}
			if i > 0 && at(s, "started_at").Before(at(steps[0], "finished_at")) {
				t.Errorf("%s started before the canary finished: %v", s["node_name"], steps)
			}
		}
		for name, n := range patchJobs(t, ro["id"].(string), "install_security_updates") {
			if n != 1 {
				t.Errorf("%s ran install_security_updates %d times", name, n)
			}
		}
		for _, m := range machines {
			if st := readFile(filepath.Join(m.upper(), "var", "lib", "dpkg", "status")); !strings.Contains(st, "Package: "+apttest.Lib+"\nStatus: install ok installed") ||
				!regexp.MustCompile(`(?s)Package: `+apttest.Lib+`\n.*?Version: 1\.1\n`).MatchString(st) {
				t.Errorf("%s: %s 1.1 is not installed", m.name, apttest.Lib)
			}
		}

		// Each node's step restarted the daemon the upgrade left on replaced code (its unit named by
		// the machine: restart_services ran with no units), through the instance's service manager.
		for _, m := range machines {
			ids := rolloutJobs(ro["id"].(string), m, "restart_services")
			if len(ids) != 1 {
				t.Fatalf("%s ran restart_services %d times", m.name, len(ids))
			}
			j := f.job(ids[0])
			var out struct {
				Restarted []struct {
					Unit      string `json:"unit"`
					BeforePID int    `json:"before_pid"`
					AfterPID  int    `json:"after_pid"`
				} `json:"restarted"`
				StillStale []int `json:"still_stale"`
			}
			raw, _ := json.Marshal(j["output"])
			must(t, json.Unmarshal(raw, &out))
			if j["state"] != "completed" || len(out.Restarted) != 1 || out.Restarted[0].Unit != apttest.DaemonUnit || len(out.StillStale) != 0 {
				t.Fatalf("%s: restart_services: %v", m.name, j)
			}
			now := m.daemonPID(t)
			if r := out.Restarted[0]; r.BeforePID != daemonPIDs[m.name] || r.AfterPID != now || now == daemonPIDs[m.name] {
				t.Errorf("%s: restarted %+v; the daemon was %d, is %d", m.name, r, daemonPIDs[m.name], now)
			}
			if l := libMapping(t, now); strings.HasSuffix(l, "(deleted)") {
				t.Errorf("%s: the restarted daemon runs the replaced library: %s", m.name, l)
			}
		}
		rows := report(t)
		html := page(t)
		for _, m := range machines {
			if r := rows[m.name]; r.Level != "green" || len(r.Reasons) != 0 {
				t.Errorf("%s: %s %+v", m.name, r.Level, r.Reasons)
			}
			if stale := staleProcesses(t, f.job(rows[m.name].JobID)); len(stale) != 0 {
				t.Errorf("%s: processes on replaced code after the restart: %v", m.name, stale)
			}
			if lvl := rowLevel(t, html, m.name); lvl != "green" {
				t.Errorf("the page shows %s %s", m.name, lvl)
			}
		}
		if !strings.Contains(html, `0 red · 0 amber · 0 grey · 3 green`) {
			t.Errorf("the page's counts:\n%s", html)
		}
	}) {
		return
	}

	if !t.Run("a held apt lock is recorded and passed; the plane killed mid-patch resumes, nothing run twice", func(t *testing.T) {
		// A security fix waits on the canary and on patch-3: lexfix-slow 1.1 over 1.0.
		for _, m := range []*patchMachine{canary, machines[2]} {
			m.run(t, "apt-get", "install", "-y", "-q", apttest.Slow+"=1.0")
		}
		// On patch-2 another apt run holds the lock (its install of lexfix-slow waits in its preinst).
		locked := machines[1]
		releaseLock := apttest.HoldLock(t, locked.merged(), locked.command("apt-get", "install", "-y", "-q", apttest.Slow+"=1.0"))
		// The canary's upgrade stops in lexfix-slow 1.1's preinst, inside its dpkg run.
		gate := apttest.NewGate(t, canary.merged())
		steps := make(chan string, 2)
		go func() {
			for range 2 {
				s, _ := gate.Next(t, nil)
				steps <- s
			}
		}()

		ro := f.cli(tr, 0, "fleet", "patch")
		id := ro["id"].(string)
		if s := testkit.Wait(t, steps, "the canary's upgrade in lexfix-slow's preinst"); s != "preinst" {
			t.Fatalf("the canary stopped at %q", s)
		}
		// The canary's install_security_updates runs (dpkg waits inside it): the plane dies.
		running := f.cli(tr, 0, "jobs", "list", "--node", canary.name, "--limit", "1")["jobs"].([]any)[0].(map[string]any)
		if running["word"] != "install_security_updates" || running["state"] != "running" {
			t.Fatalf("the canary's newest job: %v", running)
		}
		jobID := running["id"].(string)
		old := f.plane
		old.kill()
		f.startPlane("")
		f.t.Cleanup(func() { f.netnsDeleteAll("local") }) // before this plane stops
		if strings.Contains(old.log(), jobLogged("job finished", jobID)) {
			t.Fatalf("the killed plane saw the canary's job finish")
		}
		gate.Go(t) // the preinst goes on; the postinst waits too
		if s := testkit.Wait(t, steps, "the canary's upgrade in lexfix-slow's postinst"); s != "postinst" {
			t.Fatalf("the canary stopped at %q", s)
		}
		gate.Go(t)
		gate.Close()
		f.plane.logged(t, jobLogged("job finished", jobID))

		ro, status := f.lexiconLong("rollouts", "show", id, "--wait")
		if status != 0 || ro["state"] != "completed" {
			t.Fatalf("the resumed patch: exit %d: %v", status, ro)
		}
		for _, s := range ro["steps"].([]any) {
			s := s.(map[string]any)
			if s["state"] != "passed" {
				t.Errorf("step %v", s)
			}
			if isLocked := s["node_name"] == locked.name; isLocked != strings.Contains(fmt.Sprint(s["reason"]), "not patched: pkg.locked") {
				t.Errorf("step %s: %v", s["node_name"], s["reason"])
			}
		}
		// The locked node's one job: its change, failed with pkg.locked.
		if lj := f.rolloutJobs(ro)[locked.nodeID]; lj["word"] != "install_security_updates" || lj["outcome_code"] != "pkg.locked" {
			t.Errorf("the locked node's job: %v %v", lj["outcome_code"], lj["outcome_message"])
		}
		// Nothing ran twice: one install_security_updates a node, one report for the two verified,
		// none for the locked one, and one upgrade of lexfix-slow in the canary's dpkg log.
		installs := patchJobs(t, id, "install_security_updates")
		reports := patchJobs(t, id, "packages_report")
		for _, m := range machines {
			wantReports := 1
			if m == locked {
				wantReports = 0
			}
			if installs[m.name] != 1 || reports[m.name] != wantReports {
				t.Errorf("%s ran install_security_updates %d times, packages_report %d times", m.name, installs[m.name], reports[m.name])
			}
		}
		if n := canary.dpkgLogCount(" upgrade " + apttest.Slow + ":"); n != 1 {
			t.Errorf("the canary's dpkg log upgrades %s %d times:\n%s", apttest.Slow, n, readFile(filepath.Join(canary.upper(), "var", "log", "dpkg.log")))
		}
		for _, m := range []*patchMachine{canary, machines[2]} {
			if !regexp.MustCompile(`(?s)Package: ` + apttest.Slow + `\nStatus: install ok installed\n.*?Version: 1\.1\n`).MatchString(readFile(filepath.Join(m.upper(), "var", "lib", "dpkg", "status"))) {
				t.Errorf("%s: %s 1.1 is not installed", m.name, apttest.Slow)
			}
		}
		releaseLock()
	}) {
		return
	}

	t.Run("a failing package halts the patch naming node and package", func(t *testing.T) {
		canary.run(t, "apt-get", "install", "-y", "-q", apttest.Broken+"=1.0")
		ro, status := f.lexiconLong("fleet", "patch", "--wait")
		if status != 8 || ro["state"] != "halted" || ro["halt_node"] != canary.name { // ExitRolloutStopped
			t.Fatalf("fleet patch --wait: exit %d: %v at %v: %v", status, ro["state"], ro["halt_node"], ro["halt_reason"])
		}
		if reason := fmt.Sprint(ro["halt_reason"]); !strings.Contains(reason, "install_security_updates failed on "+canary.name+", package "+apttest.Broken+": pkg.failed") {
			t.Errorf("halt reason: %s", reason)
		}
		installs := patchJobs(t, ro["id"].(string), "install_security_updates")
		if installs[canary.name] != 1 || installs[machines[1].name] != 0 || installs[machines[2].name] != 0 {
			t.Errorf("install_security_updates by node after the halt: %v", installs)
		}
		rows := report(t)
		if r := rows[canary.name]; r.Level != "red" || !r.says("half_done", apttest.Broken) {
			t.Errorf("%s after the halt: %s %+v", canary.name, r.Level, r.Reasons)
		}
		if lvl := rowLevel(t, page(t), canary.name); lvl != "red" {
			t.Errorf("the page shows %s %s", canary.name, lvl)
		}
	})
}
