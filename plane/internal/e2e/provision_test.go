package e2e_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// Provisioning end to end on the netns cloud (plugins/cloud/netns): a real driver whose instances are
// network namespaces on this machine, running the real user data and the real agent the release pins.

// needNamespaces skips a test that makes network namespaces where they cannot be made (not root, no
// iproute2), and fails it in CI, which runs as root with iproute2 (.ci/run).
func needNamespaces(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else {
		for _, tool := range []string{"/usr/sbin/ip", "/usr/bin/unshare", "/usr/bin/curl"} {
			if _, err := os.Stat(tool); err != nil {
				if alt := "/bin/" + filepath.Base(tool); alt != tool {
					if _, err2 := os.Stat(alt); err2 == nil {
						continue
					}
				}
				why = tool + " is missing"
				break
			}
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the netns cloud cannot run here (%s); CI must run these tests as root with iproute2 and curl", why)
	}
	t.Skipf("the netns cloud cannot run here: %s", why)
}

// freePort is a TCP port free on every address when asked.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "0.0.0.0:0")
	must(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// netnsFleet is a fleet whose plane the instances of a netns range reach: it listens on every address,
// tells provisioned machines the range's gateway, and its minted certificate names it. Its release
// pins the netns driver, the RFC 2136 driver and an agent built as version agentVersion.
func netnsFleet(t testing.TB, gateway, agentVersion string, serveArgs ...string) *fleet {
	t.Helper()
	return netnsFleetStaged(t, gateway, agentVersion, nil, serveArgs...)
}

// netnsFleetStaged is netnsFleet whose release also carries what stage stages (nil: nothing more).
func netnsFleetStaged(t testing.TB, gateway, agentVersion string, stage func(modules string), serveArgs ...string) *fleet {
	t.Helper()
	return netnsFleetOn(t, "sqlite", gateway, agentVersion, "", stage, serveArgs...)
}

// netnsFleetOn is netnsFleetStaged on the store backend names ("sqlite", "postgres"), pinning an
// agent built as agentVersion with the test fault fault ("" for none; agent.TestFault).
func netnsFleetOn(t testing.TB, backend, gateway, agentVersion, fault string, stage func(modules string), serveArgs ...string) *fleet {
	t.Helper()
	port := freePort(t)
	args := append([]string{"--provision-url", fmt.Sprintf("https://%s:%d", gateway, port), "--tls-names", gateway,
		"--provision-every", "250ms"}, serveArgs...)
	f := newFleet(t, backend, fleetOptions{serveArgs: args, listen: fmt.Sprintf("0.0.0.0:%d", port), stage: stage})
	f.stageDrivers("cloud-netns", "dns-rfc2136")
	f.pinAgent(agentVersion, buildAgent(t, agentVersion, fault, "amd64"))
	return f
}

// pinAgent publishes release 2 pinning binary as the linux/amd64 agent with --deploy-all: with no node
// to roll out to, it is the fleet's target at once, whose agent provisioning installs.
func (f *fleet) pinAgent(version, binary string) {
	f.publishAgentRelease(version, 2, binary)
	f.planeLog.WaitFor(f.t, `"msg":"fleet target moved: no active node to roll out to","sequence":2`)
}

// netnsAccount enables the netns driver unconfined and adds an account whose state root is the test's
// and whose range is rng.
func (f *fleet) netnsAccount(tr *testkit.Buffer, name, rng string, images ...map[string]string) string {
	t := f.t
	if got := f.cli(tr, 1, "drivers", "enable", "cloud-netns"); errCode(got) != "driver.unconfined" {
		t.Fatalf("enable of the privileged netns driver without --unconfined: %v", got)
	}
	f.cli(tr, 0, "drivers", "enable", "cloud-netns", "--unconfined")
	state := filepath.Join(t.TempDir(), "netns")
	s := map[string]any{"root": state, "range": rng, "test": true}
	if len(images) > 0 {
		s["images"] = images[0] // image name -> machine root, beside the host image
	}
	settings := writeJSON(t, filepath.Join(f.dir, name+".json"), s)
	f.cli(tr, 0, "accounts", "add", "--driver", "cloud-netns", "--name", name, "--credential-file", writeSecret(t, f.dir, "local"), "--settings-file", settings)
	// Instances outlive the plane (namespaces and their agents): whatever a failed test left is
	// deleted through the plane before it stops (cleanups run last-registered first).
	t.Cleanup(func() { f.netnsDeleteAll(name) })
	return state
}

// netnsDeleteAll deletes, through the plane, every instance of the netns account name. A test that
// starts a plane again after netnsAccount registers it once more, as that plane stops before cleanups
// registered earlier run.
func (f *fleet) netnsDeleteAll(name string) {
	out, _, code := f.cliRaw(&testkit.Buffer{}, "cloud", "instances", "--account", name, "-o", "json")
	if code != 0 {
		return
	}
	var page struct{ Instances []struct{ ID, Label string } }
	if json.Unmarshal([]byte(out), &page) != nil {
		return
	}
	for _, in := range page.Instances {
		if _, stderr, code := f.cliRaw(&testkit.Buffer{}, "cloud", "delete", "--account", name, in.ID, "--confirm", in.Label); code != 0 {
			f.t.Errorf("could not delete instance %s left by the test: %s", in.ID, stderr)
		}
	}
}

// stateTimes is when a provisioning first entered each state, from its timeline.
func stateTimes(p map[string]any) map[string]time.Time {
	out := map[string]time.Time{}
	for _, e := range p["events"].([]any) {
		ev := e.(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, ev["at"].(string))
		if err != nil {
			continue
		}
		if _, ok := out[ev["state"].(string)]; !ok {
			out[ev["state"].(string)] = at
		}
	}
	return out
}

// bindAccount enables the RFC 2136 driver and adds the account "bind" for ns's example.test zone.
func (f *fleet) bindAccount(tr *testkit.Buffer, ns *named) {
	f.cli(tr, 0, "drivers", "enable", "dns-rfc2136")
	settings := writeJSON(f.t, filepath.Join(f.dir, "bind.json"), map[string]any{"server": ns.addr, "zones": []string{"example.test"}, "key_name": ns.keyName})
	cred := writeSecret(f.t, f.dir, ns.secret)
	f.cli(tr, 0, "accounts", "add", "--driver", "dns-rfc2136", "--name", "bind", "--credential-file", cred, "--settings-file", settings)
}

// firstWord is one provisioning through to its node's first word.
type firstWord struct {
	p, job map[string]any
	// toJoined is until provision --wait returned; toWord until the first word's job finished.
	toJoined, toWord time.Duration
	split            string // the provisioning's states, then the agent's statement and the job
}

func (w firstWord) String() string {
	return fmt.Sprintf("provision to joined (CLI --wait) %s; to first word %s; split: %s",
		w.toJoined.Round(time.Millisecond), w.toWord.Round(time.Millisecond), w.split)
}

// provisionToFirstWord provisions name (role=web, env=e2e) on the netns account "local" with its A
// record in example.test through the account "bind", waits for its node to take a statement, and runs
// host_report there: the path from an operator's command to the first word a new machine runs.
func (f *fleet) provisionToFirstWord(tr *testkit.Buffer, name string) firstWord {
	t := f.t
	t.Helper()
	start := time.Now()
	p := f.cli(tr, 0, "nodes", "provision", "--account", "local", "--region", "local", "--type", "ns-1", "--image", "host",
		"--name", name, "--labels", "role=web,env=e2e", "--dns-account", "bind", "--zone", "example.test", "--wait")
	w := firstWord{p: p, toJoined: time.Since(start)}
	if p["state"] != "joined" || p["reason"] != nil && p["reason"] != "" {
		t.Fatalf("provisioning: %v", p)
	}
	nodeID := p["node_id"].(string)
	took := `"msg":"node took a statement","node":"` + nodeID + `"`
	f.planeLog.WaitFor(t, took)
	w.job = f.runJob(nodeID, "host_report")
	w.toWord = time.Since(start)

	// The split: the provisioning's states from its timeline; after joined, the agent starts and takes
	// its statement (the plane's log line), then the job.
	show := f.cli(tr, 0, "provisionings", "show", p["id"].(string))
	at := stateTimes(show)
	created, err := time.Parse(time.RFC3339Nano, show["created_at"].(string))
	must(t, err)
	var split []string
	prev, prevName := created, "creating"
	for _, s := range []string{"booting", "installing", "joining", "joined"} {
		if when, ok := at[s]; ok {
			split = append(split, fmt.Sprintf("%s %s", prevName, when.Sub(prev).Round(time.Millisecond)))
			prev, prevName = when, s
		}
	}
	tookAt := logTime(t, f.planeLog.String(), took)
	jobAt := func(k string) time.Time {
		v, _ := w.job[k].(string)
		when, _ := time.Parse(time.RFC3339Nano, v)
		return when
	}
	split = append(split, fmt.Sprintf("joined to statement taken %s", tookAt.Sub(prev).Round(time.Millisecond)),
		fmt.Sprintf("statement to job queued %s", jobAt("created_at").Sub(tookAt).Round(time.Millisecond)),
		fmt.Sprintf("job queued to finished %s", jobAt("finished_at").Sub(jobAt("created_at")).Round(time.Millisecond)))
	w.split = strings.Join(split, ", ")
	return w
}

// TestProvisionOnNetns provisions a machine through the netns cloud with DNS on a real BIND: the
// instance's user data fetches the pinned agent from the artifact route with its one-time token and
// checks its sha256, the agent joins and the provider check approves it, the node's A record is in the
// zone, the node shows its labels, vocabulary and agent version, and a word runs on it. Decommission
// then removes the node, the instance and the record. The time from provision to the first word, and
// its split by state, go to the test log (make bench times it: BenchmarkProvisionToFirstWord).
func TestProvisionOnNetns(t *testing.T) {
	needNamespaces(t)
	ns := startNamed(t)
	const gateway, rng = "10.213.91.1", "10.213.91.0/24"
	f := netnsFleet(t, gateway, "1.2.0")
	tr := &testkit.Buffer{}
	defer func() {
		if t.Failed() {
			t.Logf("commands:\n%s", tr.String())
		}
	}()
	state := f.netnsAccount(tr, "local", rng)
	f.bindAccount(tr, ns)

	run := f.provisionToFirstWord(tr, "web-1")
	t.Logf("figures: %s", run)
	p := run.p
	if run.job["state"] != "completed" {
		t.Fatalf("host_report on the provisioned node: %v", run.job)
	}
	nodeID, instanceID := p["node_id"].(string), p["instance_id"].(string)
	addr := p["addresses"].([]any)[0].(string)

	// The user data fetched the agent with its token and checked it against the pinned digest.
	out, err := os.ReadFile(filepath.Join(state, "instances", instanceID, "log", "cloud-init-output.log"))
	must(t, err)
	if !strings.Contains(string(out), ": OK") {
		t.Errorf("the user data's log shows no passed sha256 check:\n%s", out)
	}
	want, err := os.ReadFile(buildAgent(t, "1.2.0", "", "amd64"))
	must(t, err)
	got, err := os.ReadFile(filepath.Join(state, "instances", instanceID, "fs", "usr-local-bin", "lexicon-agent"))
	must(t, err)
	if string(got) != string(want) {
		t.Error("the instance's installed agent is not the pinned one")
	}
	// The provider check approved the join, from the address the driver reports.
	if !strings.Contains(f.planeLog.String(), `"msg":"provisioned join approved by the provider check","provisioning":"`+p["id"].(string)) {
		t.Error("no approval by the provider check in the plane's log")
	}
	joins := f.cli(tr, 0, "joins", "list", "--status", "approved")["joins"].([]any)
	if len(joins) != 1 || joins[0].(map[string]any)["source_address"] != addr || joins[0].(map[string]any)["decided_by"] != "plane:provisioning:"+p["id"].(string) {
		t.Errorf("approved joins: %v", joins)
	}
	// The A record is in the zone, asked of BIND directly.
	if got := ns.answers(t, "web-1.example.test", mdns.TypeA); len(got) != 1 || got[0] != addr {
		t.Errorf("web-1 A: %v, want %s", got, addr)
	}
	// The node: labels, vocabulary, agent version.
	n := f.cli(tr, 0, "nodes", "show", nodeID)
	labels, _ := n["labels"].(map[string]any)
	if labels["role"] != "web" || labels["env"] != "e2e" || n["agent_version"] != "1.2.0" || n["name"] != "web-1" {
		t.Errorf("node: %v", n)
	}
	if v, _ := n["vocabulary"].([]any); len(v) == 0 {
		t.Errorf("node has no vocabulary: %v", n)
	}
	// Decommission: the node leaves, the instance is deleted, the record removed.
	if got := f.cli(tr, 2, "nodes", "decommission", nodeID, "--confirm", "web-2"); errCode(got) != "usage.invalid" {
		t.Fatalf("decommission with the wrong name typed back: %v", got)
	}
	d := f.cli(tr, 0, "nodes", "decommission", nodeID, "--confirm", "web-1")
	if d["provisioning"].(map[string]any)["state"] != "cleaned_up" || d["node"].(map[string]any)["state"] != "disconnected" {
		t.Fatalf("decommission: %v", d)
	}
	if got := ns.answers(t, "web-1.example.test", mdns.TypeA); len(got) != 0 {
		t.Errorf("web-1 A after decommission: %v", got)
	}
	if got := f.cli(tr, 1, "cloud", "show", "--account", "local", instanceID); errCode(got) != "cloud.not_found" {
		t.Errorf("the instance after decommission: %v", got)
	}
	if _, err := exec.Command("/usr/sbin/ip", "netns", "pids", "lexicon-"+instanceID).Output(); err == nil {
		t.Errorf("namespace lexicon-%s is still there", instanceID)
	}
	if n := f.cli(tr, 0, "nodes", "show", nodeID); n["state"] == "active" {
		t.Errorf("node after decommission: %v", n)
	}
}

// TestProvisionNeverJoins provisions a machine whose agent never joins (the release pins, for it, an
// agent built to succeed at join without joining): the installing state times out, the instance is deleted
// and the record says why.
func TestProvisionNeverJoins(t *testing.T) {
	needNamespaces(t)
	const gateway, rng = "10.213.92.1", "10.213.92.0/24"
	port := freePort(t)
	f := newFleet(t, "sqlite", fleetOptions{listen: fmt.Sprintf("0.0.0.0:%d", port), serveArgs: []string{
		"--provision-url", fmt.Sprintf("https://%s:%d", gateway, port), "--tls-names", gateway,
		"--provision-every", "250ms", "--provision-timeouts", "installing=3s"}})
	f.stageDrivers("cloud-netns")
	f.pinAgent("1.3.0", buildAgent(t, "1.3.0", "nojoin", "amd64"))
	tr := &testkit.Buffer{}
	defer func() {
		if t.Failed() {
			t.Logf("commands:\n%s", tr.String())
		}
	}()
	state := f.netnsAccount(tr, "local", rng)
	p := f.cli(tr, 9, "nodes", "provision", "--account", "local", "--region", "local", "--type", "ns-1", "--image", "host", "--name", "mute-1", "--wait")
	if p["state"] != "cleaned_up" || p["cleanup"] != "deleted" || !strings.Contains(fmt.Sprint(p["reason"]), "timed out: installing") {
		t.Fatalf("provisioning of an agent that never joins: %v", p)
	}
	instanceID := p["instance_id"].(string)
	if got := f.cli(tr, 1, "cloud", "show", "--account", "local", instanceID); errCode(got) != "cloud.not_found" {
		t.Errorf("the instance after the timeout: %v", got)
	}
	if _, err := os.Stat(filepath.Join(state, "instances", instanceID)); !os.IsNotExist(err) {
		t.Errorf("the instance's folder is still there: %v", err)
	}
	if l := f.cli(tr, 0, "nodes", "list")["nodes"].([]any); len(l) != 0 {
		t.Errorf("nodes: %v", l)
	}
}
