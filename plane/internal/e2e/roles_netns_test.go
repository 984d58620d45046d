package e2e_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// webServer is the web role's service: it answers every connection on the ports its config names
// with the page. Both ports listen, so that the closed one's refusal is the firewall's and not an
// empty port's. Once listening it connects to the config's notify address, the test's signal that it
// may dial (a unit's start returns once ExecStart began, not once the server listens). perl is part
// of a minimal Debian (perl-base), the only language a bare debian-12 root has to serve with.
const webServer = `use IO::Socket::INET; use IO::Select;
open(my $conf, '<', '/etc/web/web.conf') or die "web.conf: $!";
my %conf = map { /^(\w+)\s*=\s*(\S+)/ ? ($1, $2) : () } <$conf>;
my $s = IO::Select->new(map { IO::Socket::INET->new(LocalPort => $_, Listen => 5, ReuseAddr => 1) or die "port $_: $!" } split /,/, $conf{ports});
if ($conf{notify}) { my $n = IO::Socket::INET->new(PeerAddr => $conf{notify}); close $n if $n; }
while (1) {
  for my $l ($s->can_read) {
    my $client = $l->accept or next;
    open(my $f, '<', '/srv/www/index.html') or die "index.html: $!";
    print {$client} <$f>;
    close $f; close $client;
  }
}
`

// webUnit starts the server once the role's package is there (its file is the proof): the package,
// the unit and the files come in one converge, in that order.
const webUnit = `[Unit]
Description=the e2e web role's server

[Service]
ExecStartPre=/usr/bin/test -e /usr/share/lexfix/` + apttest.Tool + `
ExecStart=/usr/bin/perl /etc/web/serve.pl

[Install]
WantedBy=multi-user.target
`

// brokenUnit never starts: its ExecStartPre fails, as a unit with a bad config check would.
const brokenUnit = `[Unit]
Description=a unit whose start fails

[Service]
ExecStartPre=/bin/false
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
`

const webPage = "<h1>web on debian-12</h1>\n"

// TestRolesOnDebianInstancesSQLite and TestRolesOnDebianInstancesPostgres run rolesOnDebian on each
// store, side by side (each has its own plane, instances and address range).
func TestRolesOnDebianInstancesSQLite(t *testing.T) {
	t.Parallel() // waits mostly (on instances booting, on recipe ticks): it overlaps the others that do
	rolesOnDebian(t, "sqlite", "10.213.94.1", "10.213.94.0/24")
}

func TestRolesOnDebianInstancesPostgres(t *testing.T) {
	t.Parallel()
	rolesOnDebian(t, "postgres", "10.213.95.1", "10.213.95.0/24")
}

// webNode is one debian-12 netns instance enrolled through the install command.
type webNode struct {
	name, id        string
	instanceID, ip  string
	instance, upper string // the instance's folder; what the instance changed of the image
}

// webFleet is a plane on a netns range whose instances run the pinned agent, and a local apt
// repository on the range's gateway.
type webFleet struct {
	*fleet
	t             *testing.T
	tr            *testkit.Buffer
	state, aptURL string
	keyring       []byte
	gateway       string
}

// newWebFleet starts a plane on backend for the netns range rng, pinning an agent built with the test
// fault fault, its release carrying the converge word as shipped (an instance is a machine of its own,
// so its manifest's roots are not narrowed: the node's policy bounds it) and whatever more stages.
func newWebFleet(t *testing.T, backend, gateway, rng, fault string, more func(modules string)) *webFleet {
	needNamespaces(t)
	debian := apttest.DebianRoot(t)
	aptURL, keyring := serveAptRepo(t, gateway)

	f := netnsFleetOn(t, backend, gateway, "1.2.0", fault, func(modules string) {
		m, err := os.ReadFile(filepath.Join(root, "primitives", "converge", "manifest.json"))
		must(t, err)
		stage(t, modules, "converge", m, filepath.Join(root, "build", "wasm", "converge.wasm"), "converge.wasm")
		if more != nil {
			more(modules)
		}
	})
	tr := &testkit.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("commands:\n%s", tr.String())
		}
	})
	w := &webFleet{fleet: f, t: t, tr: tr, aptURL: aptURL, keyring: keyring, gateway: gateway}
	w.state = f.netnsAccount(tr, "local", rng, map[string]string{"debian-12": debian})
	return w
}

// enrol creates one debian-12 instance per name, each running an install command of its own (labelled
// role=web) after its admin pointed apt at the repository, and waits until each node took a statement.
// policy is written as each instance's own node policy.
func (w *webFleet) enrol(policy string, names ...string) []*webNode {
	t, f := w.t, w.fleet
	var nodes []*webNode
	for _, name := range names {
		// One command each: its token fetches the agent once.
		ic := f.cli(w.tr, 0, "nodes", "install-command", "--labels", "role=web", "--expires", "10m")
		script := installScript(t, ic)
		apt := aptPrelude(name, w.aptURL, w.keyring)
		text := strings.Replace(string(script), "set -eu\n", "set -eu\n"+apt, 1)
		userData := filepath.Join(f.dir, name+"-install.sh")
		must(t, os.WriteFile(userData, []byte(text), 0o600))
		inst := f.cli(w.tr, 0, "cloud", "create", "--account", "local", "--region", "local", "--type", "ns-1", "--image", "debian-12",
			"--label", name, "--user-data-file", userData)
		id := inst["id"].(string)
		nodes = append(nodes, &webNode{name: name, instanceID: id, instance: filepath.Join(w.state, "instances", id),
			upper: filepath.Join(w.state, "rootfs", id, "upper")})
	}
	t.Cleanup(func() { // before the instances are deleted (cleanups run last-registered first)
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("%s's user data log:\n%s", n.name, readFile(filepath.Join(n.instance, "log", "cloud-init-output.log")))
				t.Logf("%s's network:\n%s", n.name, netState("lexicon-"+n.instanceID))
			}
			t.Logf("the host's network:\n%s", netState(""))
		}
	})
	for _, n := range nodes {
		f.planeLog.WaitFor(t, `"name":"`+n.name+`","fingerprint"`) // the install command's join, approved as it is asked
	}
	ids := map[string]string{}
	for _, j := range f.cli(w.tr, 0, "joins", "list", "--status", "approved")["joins"].([]any) {
		j := j.(map[string]any)
		ids[fmt.Sprint(j["name"])] = fmt.Sprint(j["node_id"])
	}
	for _, n := range nodes {
		if n.id = ids[n.name]; n.id == "" {
			t.Fatalf("no approved join for %s: %v", n.name, ids)
		}
		f.planeLog.WaitFor(t, `"msg":"node took a statement","node":"`+n.id+`"`)
		ips := f.cli(w.tr, 0, "cloud", "show", "--account", "local", n.instanceID)["ipv4"].([]any)
		if len(ips) != 1 {
			t.Fatalf("%s's addresses: %v", n.name, ips)
		}
		n.ip = ips[0].(string)
		// The bounds are read at each converge, so writing the instance's policy (its own
		// /etc/lexicon-agent) is enough.
		must(t, os.WriteFile(filepath.Join(n.instance, "fs", "etc-lexicon-agent", "policy.json"), []byte(policy), 0o644))
	}
	return nodes
}

// webPolicy lets converge touch the web role's things and nothing else.
const webPolicy = `{
  "classes": {"look": "accept", "change": "accept", "destructive": "refuse"},
  "converge": {"paths": ["/etc/web", "/srv/www", "/etc/systemd/system"], "units": ["web*.service"], "users": ["web"],
    "packages": ["lexfix-*"], "firewall": true}
}
`

// dial reads what the node's port answers.
func (n *webNode) dial(port int) (string, error) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(n.ip, strconv.Itoa(port)), 10*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	return string(b), err
}

// agentLog follows the log of the instance's agent (its unit's output, as the shim writes it).
func (n *webNode) agentLog(t *testing.T) *testkit.Buffer {
	return followFile(t, filepath.Join(n.instance, "run", "lexicon-agent.service.log"))
}

// stageDriftRecipes stages the footprint recipes with a one-minute interval (the shortest a manifest
// may ask for), as an operator's derived release would shorten them, so that drift is seen in minutes.
func stageDriftRecipes(t *testing.T) func(modules string) {
	return func(modules string) {
		for _, name := range []string{"footprint_drift", "footprint_enforce"} {
			raw, err := os.ReadFile(filepath.Join(root, "primitives", "recipes", name, "manifest.json"))
			must(t, err)
			var m map[string]any
			must(t, json.Unmarshal(raw, &m))
			m["recipe"].(map[string]any)["interval"] = "1m"
			b, err := json.Marshal(m)
			must(t, err)
			stage(t, modules, name, b, filepath.Join(root, "build", "wasm", "recipes", name+".wasm"), name+".wasm")
		}
	}
}

// rolesOnDebian converges a web role on three real agents in debian-12 netns instances (each its own
// overlay of the Debian root, the agent installed by the install command) on a plane whose store is
// backend: a package from the local apt repository, the server's files, its unit enabled and started,
// a user with an SSH key, and an nftables table opening one port. The open port answers from outside
// each instance while the other one, served too, is refused by the firewall; a second apply changes
// nothing and fetches nothing. A file edited by hand is reported by the drift recipe as a case, an
// incident on the plane naming the item; a file of a role marked enforce edited by hand is repaired by
// the enforce recipe through converge. A role change adding a unit whose start fails, applied in
// stages, halts on the canary naming it and the unit, and the other nodes are not touched.
func rolesOnDebian(t *testing.T, backend, gateway, rng string) {
	w := newWebFleet(t, backend, gateway, rng, "", stageDriftRecipes(t))
	f := w.fleet
	nodes := w.enrol(webPolicy, "web-1", "web-2", "web-3")
	byID := map[string]*webNode{}
	for _, n := range nodes {
		byID[n.id] = n
	}

	// The server's signal that it listens: a connection from an instance to the gateway.
	readyL, err := net.Listen("tcp", "0.0.0.0:0")
	must(t, err)
	t.Cleanup(func() { readyL.Close() })
	ready := make(chan struct{}, 8)
	go func() {
		for {
			c, err := readyL.Accept()
			if err != nil {
				return
			}
			c.Close()
			ready <- struct{}{}
		}
	}()
	webConf := fmt.Sprintf("ports = 8080,8081\nnotify = %s:%d\n", gateway, readyL.Addr().(*net.TCPAddr).Port)

	roleFile := func(units ...[2]string) string {
		files := []map[string]any{
			{"path": "/etc/web/serve.pl", "content": webServer, "mode": "0644"},
			{"path": "/etc/web/web.conf", "content": webConf, "mode": "0640", "owner": "root", "group": "web"},
			{"path": "/srv/www/index.html", "content": webPage, "mode": "0644"},
		}
		var us []map[string]any
		for _, u := range units {
			unitFile := "/etc/systemd/system/" + u[0]
			files = append(files, map[string]any{"path": unitFile, "content": u[1], "mode": "0644"})
			unitFiles := []string{unitFile}
			if u[0] == "web.service" {
				unitFiles = append(unitFiles, "/etc/web/serve.pl", "/etc/web/web.conf")
			}
			us = append(us, map[string]any{"name": u[0], "enabled": true, "started": true, "files": unitFiles})
		}
		b, err := json.Marshal(map[string]any{"name": "web", "description": "a web server on debian-12",
			"packages": []map[string]any{{"name": apttest.Tool, "state": "present"}},
			"files":    files, "units": us,
			"users":    []map[string]any{{"name": "web", "state": "present", "shell": "/bin/sh", "ssh_keys": []string{sshKeyE2E}}},
			"firewall": map[string]any{"state": "present", "inbound": []map[string]any{{"protocol": "tcp", "port": 8080}}},
		})
		must(t, err)
		p := filepath.Join(f.dir, fmt.Sprintf("web-%d.json", len(units)))
		must(t, os.WriteFile(p, b, 0o600))
		return p
	}
	if v := f.lexicon(false, "roles", "create", roleFile([2]string{"web.service", webUnit})); v["version"] != float64(1) {
		t.Fatalf("roles create: %v", v)
	}
	f.lexicon(false, "roles", "assign", "web", "role=web")
	// A second role, marked enforce: its drift is repaired, not only reported.
	guard := filepath.Join(f.dir, "guard.json")
	must(t, os.WriteFile(guard, []byte(`{"name": "guard", "enforce": true, "files": [{"path": "/srv/www/robots.txt", "content": "`+
		strings.ReplaceAll(robots, "\n", `\n`)+`", "mode": "0644"}]}`), 0o600))
	if v := f.lexicon(false, "roles", "create", guard); v["enforce"] != true {
		t.Fatalf("roles create guard: %v", v)
	}
	f.lexicon(false, "roles", "assign", "guard", "role=web")

	// apply runs roles apply --wait and returns the rollout and its converge jobs by node.
	apply := func(t *testing.T, wantStatus int, args ...string) (map[string]any, map[string]map[string]any) {
		t.Helper()
		ro, status := f.lexiconStatus(append([]string{"roles", "apply", "web", "--wait"}, args...)...)
		if status != wantStatus {
			t.Fatalf("roles apply --wait: exit %d, want %d: %v", status, wantStatus, ro)
		}
		return ro, f.rolloutJobs(ro)
	}
	footprintStates := func(n *webNode) map[string]any {
		fp := f.lexicon(false, "nodes", "footprint", n.name)
		states := map[string]any{}
		for _, it := range fp["items"].([]any) {
			it := it.(map[string]any)
			states[fmt.Sprint(it["id"])] = it["state"]
		}
		return states
	}

	if !t.Run("converge", func(t *testing.T) {
		ro, jobs := apply(t, 0)
		if ro["state"] != "completed" || len(jobs) != len(nodes) {
			t.Fatalf("apply: %v, converges on %d nodes", ro["state"], len(jobs))
		}
		for _, n := range nodes {
			j := jobs[n.id]
			o := outputOf(t, j)
			if o.Result != "converged" || o.Counts.Failed != 0 || o.Counts.Refused != 0 {
				t.Fatalf("apply on %s: %v %+v", n.name, j["outcome_code"], o)
			}
			changed := map[string]bool{}
			for _, it := range o.Items {
				changed[it.ID] = it.Status == "changed"
			}
			for _, id := range []string{"package:" + apttest.Tool, "file:/etc/web/serve.pl", "file:/etc/web/web.conf", "file:/srv/www/index.html",
				"file:/etc/systemd/system/web.service", "unit:web.service", "user:web", "firewall", "file:/srv/www/robots.txt"} {
				if !changed[id] {
					t.Errorf("%s: %s was not changed: %+v", n.name, id, o.Items)
				}
			}
		}
		for range nodes {
			testkit.Wait(t, ready, "a web server listening")
		}
		for _, n := range nodes {
			// The open port answers from outside the instance, with the role's page; the closed one,
			// on which the same server listens, is reset by Lexicon's table.
			if got, err := n.dial(8080); err != nil || got != webPage {
				t.Fatalf("%s: the open port: %q %v\nserver log: %s", n.name, got, err, readFile(filepath.Join(n.instance, "run", "web.service.log")))
			}
			if _, err := n.dial(8081); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("%s: the closed port must be refused by the firewall's reset: %v", n.name, err)
			}
			// The rendered table, as nft lists it in the instance's network namespace, beside no other.
			ruleset, err := exec.Command("ip", "netns", "exec", "lexicon-"+n.instanceID, "nft", "list", "ruleset").CombinedOutput()
			if err != nil {
				t.Fatalf("nft list ruleset in %s: %v\n%s", n.name, err, ruleset)
			}
			for _, want := range []string{"table inet lexicon {", "tcp dport 8080 accept", "meta l4proto tcp reject with tcp reset"} {
				if !strings.Contains(string(ruleset), want) {
					t.Errorf("%s's ruleset has no %q:\n%s", n.name, want, ruleset)
				}
			}
			// The machine: the package from the local repository in the instance's own dpkg, the
			// user with its key, the unit enabled (the shim's multi-user.target.wants link).
			if st := readFile(filepath.Join(n.upper, "var", "lib", "dpkg", "status")); !strings.Contains(st, "Package: "+apttest.Tool+"\nStatus: install ok installed") {
				t.Errorf("%s is not installed in %s", apttest.Tool, n.name)
			}
			if pw := readFile(filepath.Join(n.upper, "etc", "passwd")); !strings.Contains(pw, "\nweb:x:") {
				t.Errorf("no user web in %s's /etc/passwd:\n%s", n.name, pw)
			}
			if fi, err := os.Stat(filepath.Join(n.upper, "etc", "web", "web.conf")); err != nil || fi.Mode().Perm() != 0o640 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
				t.Errorf("%s: web.conf: %v %v", n.name, fi, err)
			} else if grp := readFile(filepath.Join(n.upper, "etc", "group")); !strings.Contains(grp, fmt.Sprintf("\nweb:x:%d:", fi.Sys().(*syscall.Stat_t).Gid)) {
				t.Errorf("%s: web.conf's group (%d) is not web:\n%s", n.name, fi.Sys().(*syscall.Stat_t).Gid, grp)
			}
			if keys := readFile(filepath.Join(n.upper, "home", "web", ".ssh", "authorized_keys")); keys != sshKeyE2E+"\n" {
				t.Errorf("%s: web's authorized_keys: %q", n.name, keys)
			}
			if _, err := os.Lstat(filepath.Join(n.instance, "fs", "etc-systemd-system", "multi-user.target.wants", "web.service")); err != nil {
				t.Errorf("%s: web.service is not enabled: %v", n.name, err)
			}
			// The footprint, from the node's own report.
			for id, st := range footprintStates(n) {
				if st != "changed" {
					t.Errorf("%s: footprint item %s %v", n.name, id, st)
				}
			}
		}
	}) {
		return
	}

	if !t.Run("second apply changes and fetches nothing", func(t *testing.T) {
		_, jobs := apply(t, 0)
		for _, n := range nodes {
			o := outputOf(t, jobs[n.id])
			if o.Result != "converged" || o.Counts.Changed != 0 || o.Counts.Failed != 0 || o.Fetched != 0 || o.Counts.Unchanged != len(o.Items) {
				t.Fatalf("second apply on %s: fetched %d, %+v", n.name, o.Fetched, o)
			}
			if got, err := n.dial(8080); err != nil || got != webPage {
				t.Fatalf("%s: the open port after the second apply: %q %v", n.name, got, err)
			}
		}
	}) {
		return
	}

	if !t.Run("drift is reported and, under enforce, repaired", func(t *testing.T) {
		// By hand, on web-2 a file of the web role, on web-3 one of the guard role (enforce).
		drifted, enforced := nodes[1], nodes[2]
		enforceLog := enforced.agentLog(t)
		must(t, os.WriteFile(filepath.Join(drifted.upper, "srv", "www", "index.html"), []byte("<h1>by hand</h1>\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(enforced.upper, "srv", "www", "robots.txt"), []byte("Disallow: /\n"), 0o644))

		// Two failing ticks a minute apart: the drift recipe opens a case, the plane an incident.
		f.planeLog.WaitFor(t, `"msg":"incident opened"`)
		list := f.incidentsOf(drifted.name)
		if len(list) != 1 {
			t.Fatalf("incidents of %s: %v", drifted.name, list)
		}
		inc := list[0]
		if inc["source"] != "recipe:footprint_drift" || inc["condition"] != "open" || !strings.Contains(fmt.Sprint(inc["summary"]), "file:/srv/www/index.html") {
			t.Errorf("the drift incident: %v", inc)
		}
		show := f.lexicon(false, "incidents", "show", inc["id"].(string))
		if c, _ := show["case"].(map[string]any); c == nil || c["recipe"] != "footprint_drift" || !strings.Contains(fmt.Sprint(c), "file:/srv/www/index.html") {
			t.Errorf("the drift incident's case: %v", show["case"])
		}
		// The same ticks on web-3 repair the enforced file through converge: no case, the file whole.
		enforceLog.WaitFor(t, `"msg":"repair attempt ended","part":"recipes","recipe":"footprint_enforce","attempt":1,"outcome":"repaired"`)
		if got := readFile(filepath.Join(enforced.upper, "srv", "www", "robots.txt")); got != robots {
			t.Errorf("the enforced file after its repair: %q", got)
		}
		for _, n := range []*webNode{nodes[0], enforced} {
			if l := f.incidentsOf(n.name); len(l) != 0 {
				t.Errorf("incidents of %s: %v", n.name, l)
			}
		}
		// The drift recipe only reports: the file it found is still the hand's.
		if got := readFile(filepath.Join(drifted.upper, "srv", "www", "index.html")); got != "<h1>by hand</h1>\n" {
			t.Errorf("the drifted file was changed by the recipe that only reports: %q", got)
		}
		// An apply repairs it.
		_, jobs := apply(t, 0)
		if o := outputOf(t, jobs[drifted.id]); o.Counts.Changed != 1 {
			t.Errorf("apply after the drift on %s: %+v", drifted.name, o)
		}
		if got, err := drifted.dial(8080); err != nil || got != webPage {
			t.Errorf("%s: the open port after the apply: %q %v", drifted.name, got, err)
		}
	}) {
		return
	}

	t.Run("a unit that fails to start halts the staged apply", func(t *testing.T) {
		f.lexicon(false, "roles", "edit", "web", roleFile([2]string{"web.service", webUnit}, [2]string{"web-broken.service", brokenUnit}), "--base", "1")
		ro, jobs := apply(t, 8, "--canary", "1", "--stages", "100%") // ExitRolloutStopped
		if len(jobs) != 1 {
			t.Fatalf("the halted rollout ran converges on %d nodes, want the canary's only: %v", len(jobs), ro)
		}
		var canary *webNode
		var j map[string]any
		for id, job := range jobs {
			canary, j = byID[id], job
		}
		reason := fmt.Sprint(ro["halt_reason"])
		if ro["state"] != "halted" || ro["halt_node"] != canary.name || !strings.Contains(reason, "unit:web-broken.service") {
			t.Fatalf("the rollout: state %v, halted on %v (the canary is %s): %s", ro["state"], ro["halt_node"], canary.name, reason)
		}
		if j["outcome_code"] != "footprint.items_failed" {
			t.Errorf("the converge's code: %v", j["outcome_code"])
		}
		o := outputOf(t, j)
		for _, it := range o.Items {
			if (it.ID == "unit:web-broken.service") != (it.Status == "failed") {
				t.Errorf("item %s is %s", it.ID, it.Status)
			}
		}
		states := footprintStates(canary)
		// The server was not restarted: the working unit's only change is the service manager's reload
		// (converge reports the one daemon-reload on the first unit).
		var items struct {
			Items []struct {
				ID      string   `json:"id"`
				Changes []string `json:"changes"`
			} `json:"items"`
		}
		raw, _ := json.Marshal(j["output"])
		must(t, json.Unmarshal(raw, &items))
		for _, it := range items.Items {
			if it.ID == "unit:web.service" && len(it.Changes) > 0 && (len(it.Changes) != 1 || it.Changes[0] != "daemon-reload") {
				t.Errorf("web.service was touched by the halted apply: %v", it.Changes)
			}
		}
		for _, it := range o.Items {
			if states[it.ID] != it.Status {
				t.Errorf("the footprint shows %s %v, the node reported %s", it.ID, states[it.ID], it.Status)
			}
		}
		// The rest of the fleet is as it was: every server still answers, and the nodes past the
		// canary have no broken unit.
		for _, n := range nodes {
			if got, err := n.dial(8080); err != nil || got != webPage {
				t.Errorf("%s: the open port after the halted apply: %q %v", n.name, got, err)
			}
			if n != canary {
				if _, err := os.Stat(filepath.Join(n.instance, "fs", "etc-systemd-system", "web-broken.service")); !os.IsNotExist(err) {
					t.Errorf("%s, past the canary, has the broken unit: %v", n.name, err)
				}
			}
		}
	})
}

// robots is the guard role's one file.
const robots = "User-agent: *\nDisallow:\n"

// sshKeyE2E is the web user's authorized key.
const sshKeyE2E = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl web@lexicon.test"

// netState is what ip and nft say of network namespace ns's addresses, routes, neighbours and rules
// ("" for the host's), for a test that failed on a connection.
func netState(ns string) string {
	var b strings.Builder
	for _, argv := range [][]string{{"ip", "-4", "addr"}, {"ip", "-4", "route"}, {"ip", "-4", "neigh"}, {"nft", "list", "ruleset"},
		{"sysctl", "net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter"}} {
		if ns != "" {
			argv = append([]string{"ip", "netns", "exec", ns}, argv...)
		}
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		fmt.Fprintf(&b, "$ %s (%v)\n%s", strings.Join(argv, " "), err, out)
	}
	return b.String()
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// followFile copies what is written to the file at path into a buffer as it is written (inotify: no
// polling), from its start, for a test to wait on lines of a log another process writes. The file
// may not exist yet; its folder must.
func followFile(t *testing.T, path string) *testkit.Buffer {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	must(t, err)
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_MODIFY|unix.IN_CREATE); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	events := os.NewFile(uintptr(fd), "inotify") // non-blocking: reads park in the poller, Close ends them
	t.Cleanup(func() { events.Close() })
	buf := &testkit.Buffer{}
	go func() {
		var f *os.File
		defer func() {
			if f != nil {
				f.Close()
			}
		}()
		ev := make([]byte, 64<<10)
		for {
			if f == nil {
				f, _ = os.Open(path)
			}
			if f != nil {
				_, _ = io.Copy(buf, f)
			}
			if _, err := events.Read(ev); err != nil {
				return
			}
		}
	}()
	return buf
}

// sleepUnit is a service that runs until it is stopped: its pid tells one start from the next.
const sleepUnit = `[Unit]
Description=the kill test's service

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
`

// TestRolesConvergeKilledOnDebianInstances kills a real agent (SIGKILL, as a crash) at each step of a
// converge, each on its own debian-12 instance, all in one apply: after it fetched an artifact, after
// the package install, half way through writing a file, and before the restart of a unit whose file
// changed. The agent is built to pause at the step its converge folder's test-pause names (a test build,
// agent.TestFault "pause"); the test kills it there, the instance's service manager starts it again,
// and the plane counts the job lost when the agent claims idle. Each file is then the old version or
// the new one, never torn; the next apply completes on every node, restarts the unit (the restart
// the killed converge owed, or the one its file's change asks for), and the footprint the plane shows
// is the new one.
func TestRolesConvergeKilledOnDebianInstances(t *testing.T) {
	t.Parallel()
	w := newWebFleet(t, "sqlite", "10.213.96.1", "10.213.96.0/24", "pause", nil)
	f := w.fleet
	steps := []string{"artifact.staged", "pkg.ensure.done", "fs.install.half", "systemd.before_restart"}
	var names []string
	for i := range steps {
		names = append(names, fmt.Sprintf("kill-%d", i+1))
	}
	nodes := w.enrol(webPolicy, names...)
	logs := map[string]*testkit.Buffer{}
	for _, n := range nodes {
		logs[n.id] = n.agentLog(t)
	}

	// Version 1: a big file (three of the file capability's 256 KiB copies, so that half way is mid
	// write), a small one, and a unit restarted when the small one changes. Version 2 changes both
	// files and adds the package.
	big := func(v int) string {
		return strings.Repeat(fmt.Sprintf("version %d of the big file, one of its lines\n", v), 15000)
	}
	conf := func(v int) string { return fmt.Sprintf("version = %d\n", v) }
	roleFile := func(v int) string {
		role := map[string]any{"name": "kill",
			"files": []map[string]any{
				{"path": "/etc/web/big.txt", "content": big(v), "mode": "0644"},
				{"path": "/etc/web/web.conf", "content": conf(v), "mode": "0644"},
				{"path": "/etc/systemd/system/web.service", "content": sleepUnit, "mode": "0644"},
			},
			"units": []map[string]any{{"name": "web.service", "enabled": true, "started": true,
				"files": []string{"/etc/systemd/system/web.service", "/etc/web/web.conf"}}},
		}
		if v == 2 {
			role["packages"] = []map[string]any{{"name": apttest.Tool, "state": "present"}}
		}
		b, err := json.Marshal(role)
		must(t, err)
		p := filepath.Join(f.dir, fmt.Sprintf("kill-%d.json", v))
		must(t, os.WriteFile(p, b, 0o600))
		return p
	}
	f.lexicon(false, "roles", "create", roleFile(1))
	f.lexicon(false, "roles", "assign", "kill", "role=web")
	applyArgs := []string{"roles", "apply", "kill", "--stages", "100%", "--max-parallel", strconv.Itoa(len(nodes))}
	if ro, status := f.lexiconStatus(append(applyArgs, "--wait")...); status != 0 || ro["state"] != "completed" {
		t.Fatalf("the first apply: exit %d %v", status, ro)
	}
	installed := func(n *webNode) bool {
		return strings.Contains(readFile(filepath.Join(n.upper, "var", "lib", "dpkg", "status")), "Package: "+apttest.Tool+"\nStatus: install ok installed")
	}
	// mainPID is a unit's main process as the shim records it: its pid and start time, so that a
	// restart shows even were the pid reused.
	mainPID := func(n *webNode, unit string) string {
		return strings.TrimSpace(readFile(filepath.Join(n.instance, "run", unit+".main")))
	}
	servicePID := map[string]string{}
	for i, n := range nodes {
		if servicePID[n.id] = mainPID(n, "web.service"); servicePID[n.id] == "" {
			t.Fatalf("%s: web.service is not running after the first apply", n.name)
		}
		must(t, os.WriteFile(filepath.Join(n.instance, "fs", "var-lib-lexicon-agent", "converge", "test-pause"), []byte(steps[i]), 0o600))
	}

	f.lexicon(false, "roles", "edit", "kill", roleFile(2), "--base", "1")
	ro, status := f.lexiconStatus(applyArgs...)
	if status != 0 {
		t.Fatalf("roles apply: exit %d %v", status, ro)
	}
	for i, n := range nodes {
		logs[n.id].WaitFor(t, `"msg":"converge paused for the test","part":"converge","step":"`+steps[i]+`"`)
		pid, err := strconv.Atoi(strings.Fields(mainPID(n, "lexicon-agent.service") + " x")[0])
		must(t, err)
		must(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	// The service manager starts each agent again, which claims idle: its job is counted lost.
	shown := f.lexicon(false, "rollouts", "show", ro["id"].(string))
	jobOf := map[string]string{}
	for _, s := range shown["steps"].([]any) {
		s := s.(map[string]any)
		jobOf[fmt.Sprint(s["node_id"])] = fmt.Sprint(s["job_id"])
	}
	for _, n := range nodes {
		f.planeLog.WaitFor(t, `"msg":"job lost: its node claimed while idle","job":"`+jobOf[n.id]+`"`)
	}
	if ro, status := f.lexiconStatus("rollouts", "show", ro["id"].(string), "--wait"); status == 0 || ro["state"] != "halted" ||
		!strings.Contains(fmt.Sprint(ro["halt_reason"]), "job.lost") {
		t.Errorf("the killed apply's rollout: exit %d, %v: %v", status, ro["state"], ro["halt_reason"])
	}

	// Each file old or new, never torn, and what each step had done before it done.
	for i, n := range nodes {
		step := steps[i]
		bigNow, confNow := readFile(filepath.Join(n.upper, "etc", "web", "big.txt")), readFile(filepath.Join(n.upper, "etc", "web", "web.conf"))
		bigV, confV := 0, 0
		for v := 1; v <= 2; v++ {
			if bigNow == big(v) {
				bigV = v
			}
			if confNow == conf(v) {
				confV = v
			}
		}
		if bigV == 0 || confV == 0 {
			t.Errorf("killed at %s: a torn file: big.txt %d bytes (version %d), web.conf %q", step, len(bigNow), bigV, confNow)
			continue
		}
		switch step {
		case "artifact.staged":
			if bigV != 1 || confV != 1 || installed(n) {
				t.Errorf("killed after a fetch, something changed: big.txt v%d, web.conf v%d, package %v", bigV, confV, installed(n))
			}
		case "pkg.ensure.done":
			if bigV != 1 || confV != 1 || !installed(n) {
				t.Errorf("killed after the package install: big.txt v%d, web.conf v%d, package %v", bigV, confV, installed(n))
			}
		case "fs.install.half":
			if bigV != 1 || !installed(n) {
				t.Errorf("killed half way through big.txt: big.txt v%d, package %v", bigV, installed(n))
			}
			// What was being written is the install's temporary file beside it, part of the new
			// version, never renamed over the old.
			tmps, _ := filepath.Glob(filepath.Join(n.upper, "etc", "web", ".lexicon-*.new"))
			if len(tmps) != 1 {
				t.Errorf("killed half way through big.txt: temporary files %v", tmps)
			} else if fi, err := os.Stat(tmps[0]); err != nil || fi.Size() == 0 || fi.Size() >= int64(len(big(2))) {
				t.Errorf("killed half way through big.txt: the temporary file %v %v", fi, err)
			}
		case "systemd.before_restart":
			if bigV != 2 || confV != 2 || mainPID(n, "web.service") != servicePID[n.id] {
				t.Errorf("killed before the restart: big.txt v%d, web.conf v%d, web.service restarted %v", bigV, confV, mainPID(n, "web.service") != servicePID[n.id])
			}
		}
	}

	// The next apply finishes every converge; the unit is restarted on each node.
	ro, status = f.lexiconStatus(append(applyArgs, "--wait")...)
	if status != 0 || ro["state"] != "completed" {
		t.Fatalf("the apply after the kills: exit %d %v", status, ro)
	}
	jobs := f.rolloutJobs(ro)
	for i, n := range nodes {
		o := outputOf(t, jobs[n.id])
		if o.Result != "converged" || o.Counts.Failed != 0 {
			t.Errorf("killed at %s, the next converge: %+v", steps[i], o)
		}
		if readFile(filepath.Join(n.upper, "etc", "web", "big.txt")) != big(2) || readFile(filepath.Join(n.upper, "etc", "web", "web.conf")) != conf(2) || !installed(n) {
			t.Errorf("killed at %s, the next converge did not finish the role", steps[i])
		}
		if mainPID(n, "web.service") == servicePID[n.id] {
			t.Errorf("killed at %s, web.service was never restarted", steps[i])
		}
		if tmps, _ := filepath.Glob(filepath.Join(n.upper, "etc", "web", ".lexicon-*.new")); len(tmps) != 0 {
			t.Errorf("killed at %s, temporary files left after the next converge: %v", steps[i], tmps)
		}
		for _, it := range f.lexicon(false, "nodes", "footprint", n.name)["items"].([]any) {
			it := it.(map[string]any)
			if st := it["state"]; st != "changed" && st != "unchanged" {
				t.Errorf("killed at %s, the footprint shows %v", steps[i], it)
			}
		}
		t.Logf("killed at %s: the next converge fetched %d artifacts", steps[i], o.Fetched)
	}
}

// serveAptRepo serves the local apt repository over HTTP on every address, as the instances of the
// range whose gateway is gateway reach it, and returns its URL there and the repository's keyring.
func serveAptRepo(t *testing.T, gateway string) (url string, keyring []byte) {
	t.Helper()
	repo := apttest.Repo(t)
	keyring, err := os.ReadFile(filepath.Join(repo, apttest.KeyringName))
	must(t, err)
	l, err := net.Listen("tcp", "0.0.0.0:0")
	must(t, err)
	srv := &http.Server{Handler: http.StripPrefix("/debian", http.FileServer(http.Dir(repo)))}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + gateway + ":" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port) + "/debian", keyring
}

// aptPrelude is what a machine's admin runs before the install command: name the node, trust the
// repository's key and point apt at it.
func aptPrelude(name, aptURL string, keyring []byte) string {
	return fmt.Sprintf("LEXICON_NAME=%s\nmkdir -p /etc/apt/keyrings\necho %s | base64 -d >/etc/apt/keyrings/%s\necho %s | base64 -d >/etc/apt/sources.list.d/lexfix.list\napt-get update -q\n",
		name, base64.StdEncoding.EncodeToString(keyring), apttest.KeyringName,
		base64.StdEncoding.EncodeToString([]byte(apttest.SourcesList(aptURL, "/etc/apt/keyrings/"+apttest.KeyringName))))
}
