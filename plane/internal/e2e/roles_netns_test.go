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

// TestRolesOnDebianInstance converges a web role on a real agent in a debian-12 netns instance (its
// own overlay of the Debian root, the agent installed by the install command): a package from the
// local apt repository, the server's files, its unit enabled and started, a user with an SSH key, and
// an nftables table opening one port. The open port answers from outside the instance while the
// other one, served too, is refused by the firewall; a second apply changes nothing and fetches
// nothing; a role change adding a unit whose start fails, applied in stages, halts on the node naming
// it and the unit.
func TestRolesOnDebianInstance(t *testing.T) {
	needNamespaces(t)
	const gateway, rng = "10.213.94.1", "10.213.94.0/24"
	debian := apttest.DebianRoot(t)
	repo := apttest.Repo(t)
	keyring, err := os.ReadFile(filepath.Join(repo, apttest.KeyringName))
	must(t, err)

	// The local apt repository, over HTTP on every address: the instance reaches it on its gateway.
	l, err := net.Listen("tcp", "0.0.0.0:0")
	must(t, err)
	srv := &http.Server{Handler: http.StripPrefix("/debian", http.FileServer(http.Dir(repo)))}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	aptURL := "http://" + gateway + ":" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port) + "/debian"

	// The converge word as shipped: the instance is a machine of its own, so its manifest's roots are
	// not narrowed (the node's policy bounds it).
	f := netnsFleetStaged(t, gateway, "1.2.0", func(modules string) {
		m, err := os.ReadFile(filepath.Join(root, "primitives", "converge", "manifest.json"))
		must(t, err)
		stage(t, modules, "converge", m, filepath.Join(root, "build", "wasm", "converge.wasm"), "converge.wasm")
	})
	tr := &testkit.Buffer{}
	defer func() {
		if t.Failed() {
			t.Logf("commands:\n%s", tr.String())
		}
	}()
	state := f.netnsAccount(tr, "local", rng, map[string]string{"debian-12": debian})

	// The install command, pasted on the instance after its admin pointed apt at the repository.
	ic := f.cli(tr, 0, "nodes", "install-command", "--labels", "role=web", "--expires", "10m")
	cmd, _ := ic["command"].(string)
	b64, ok := strings.CutPrefix(cmd, "echo ")
	b64, ok2 := strings.CutSuffix(b64, " | base64 -d | sh")
	script, err := base64.StdEncoding.DecodeString(b64)
	if !ok || !ok2 || err != nil {
		t.Fatalf("install command %v: %v", ic, err)
	}
	apt := fmt.Sprintf("LEXICON_NAME=web-1\nmkdir -p /etc/apt/keyrings\necho %s | base64 -d >/etc/apt/keyrings/%s\necho %s | base64 -d >/etc/apt/sources.list.d/lexfix.list\napt-get update -q\n",
		base64.StdEncoding.EncodeToString(keyring), apttest.KeyringName,
		base64.StdEncoding.EncodeToString([]byte(apttest.SourcesList(aptURL, "/etc/apt/keyrings/"+apttest.KeyringName))))
	text := strings.Replace(string(script), "set -eu\n", "set -eu\n"+apt, 1)
	userData := filepath.Join(f.dir, "install.sh")
	must(t, os.WriteFile(userData, []byte(text), 0o600))
	inst := f.cli(tr, 0, "cloud", "create", "--account", "local", "--region", "local", "--type", "ns-1", "--image", "debian-12",
		"--label", "web-1", "--user-data-file", userData)
	instanceID := inst["id"].(string)
	f.planeLog.WaitFor(t, `"msg":"join requested"`)
	joins := f.cli(tr, 0, "joins", "list", "--status", "approved")["joins"].([]any)
	if len(joins) != 1 {
		t.Fatalf("approved joins: %v", joins)
	}
	nodeID := joins[0].(map[string]any)["node_id"].(string)
	f.planeLog.WaitFor(t, `"msg":"node took a statement","node":"`+nodeID+`"`)
	ips := f.cli(tr, 0, "cloud", "show", "--account", "local", instanceID)["ipv4"].([]any)
	if len(ips) != 1 {
		t.Fatalf("the instance's addresses: %v", ips)
	}
	nodeIP := ips[0].(string)

	// The node's owner lets converge touch the web role's things and nothing else. The bounds are read
	// at each converge, so writing the instance's policy (its own /etc/lexicon-agent) is enough.
	instance := filepath.Join(state, "instances", instanceID)
	must(t, os.WriteFile(filepath.Join(instance, "fs", "etc-lexicon-agent", "policy.json"), []byte(`{
  "classes": {"look": "accept", "change": "accept", "destructive": "refuse"},
  "converge": {"paths": ["/etc/web", "/srv/www", "/etc/systemd/system"], "units": ["web*.service"], "users": ["web"],
    "packages": ["lexfix-*"], "firewall": true}
}
`), 0o644))
	upper := filepath.Join(state, "rootfs", instanceID, "upper") // what the instance changed of the image

	// The server's signal that it listens: a connection from the instance to the gateway.
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

	apply := func(t *testing.T, wantStatus int, args ...string) (map[string]any, map[string]any) {
		t.Helper()
		ro, status := f.lexiconStatus(append([]string{"roles", "apply", "web", "--wait"}, args...)...)
		if status != wantStatus {
			t.Fatalf("roles apply --wait: exit %d, want %d: %v", status, wantStatus, ro)
		}
		j, ok := f.rolloutJobs(ro)[nodeID]
		if !ok {
			t.Fatalf("the rollout ran no converge on web-1: %v", ro)
		}
		return ro, j
	}
	dial := func(port int) (string, error) {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(nodeIP, strconv.Itoa(port)), 10*time.Second)
		if err != nil {
			return "", err
		}
		defer c.Close()
		b, err := io.ReadAll(c)
		return string(b), err
	}

	if !t.Run("converge", func(t *testing.T) {
		ro, j := apply(t, 0)
		o := outputOf(t, j)
		if ro["state"] != "completed" || o.Result != "converged" || o.Counts.Failed != 0 || o.Counts.Refused != 0 {
			t.Fatalf("apply: %v %v %+v", ro["state"], j["outcome_code"], o)
		}
		changed := map[string]bool{}
		for _, it := range o.Items {
			changed[it.ID] = it.Status == "changed"
		}
		for _, id := range []string{"package:" + apttest.Tool, "file:/etc/web/serve.pl", "file:/etc/web/web.conf", "file:/srv/www/index.html",
			"file:/etc/systemd/system/web.service", "unit:web.service", "user:web", "firewall"} {
			if !changed[id] {
				t.Errorf("%s was not changed: %+v", id, o.Items)
			}
		}
		testkit.Wait(t, ready, "the web server listening")
		// The open port answers from outside the instance, with the role's page; the closed one, on
		// which the same server listens, is reset by Lexicon's table.
		if got, err := dial(8080); err != nil || got != webPage {
			t.Fatalf("the open port: %q %v\nserver log: %s", got, err, readFile(filepath.Join(instance, "run", "web.service.log")))
		}
		if _, err := dial(8081); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("the closed port must be refused by the firewall's reset: %v", err)
		}
		// The rendered table, as nft lists it in the instance's network namespace, beside no other.
		ruleset, err := exec.Command("ip", "netns", "exec", "lexicon-"+instanceID, "nft", "list", "ruleset").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list ruleset in the instance: %v\n%s", err, ruleset)
		}
		for _, want := range []string{"table inet lexicon {", "tcp dport 8080 accept", "meta l4proto tcp reject with tcp reset"} {
			if !strings.Contains(string(ruleset), want) {
				t.Errorf("the instance's ruleset has no %q:\n%s", want, ruleset)
			}
		}
		// The machine: the package from the local repository in the instance's own dpkg, the user with
		// its key, the unit enabled (the shim's multi-user.target.wants link).
		if st := readFile(filepath.Join(upper, "var", "lib", "dpkg", "status")); !strings.Contains(st, "Package: "+apttest.Tool+"\nStatus: install ok installed") {
			t.Errorf("%s is not installed in the instance", apttest.Tool)
		}
		if pw := readFile(filepath.Join(upper, "etc", "passwd")); !strings.Contains(pw, "\nweb:x:") {
			t.Errorf("no user web in the instance's /etc/passwd:\n%s", pw)
		}
		if fi, err := os.Stat(filepath.Join(upper, "etc", "web", "web.conf")); err != nil || fi.Mode().Perm() != 0o640 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("web.conf: %v %v", fi, err)
		} else if grp := readFile(filepath.Join(upper, "etc", "group")); !strings.Contains(grp, fmt.Sprintf("\nweb:x:%d:", fi.Sys().(*syscall.Stat_t).Gid)) {
			t.Errorf("web.conf's group (%d) is not web:\n%s", fi.Sys().(*syscall.Stat_t).Gid, grp)
		}
		if keys := readFile(filepath.Join(upper, "home", "web", ".ssh", "authorized_keys")); keys != sshKeyE2E+"\n" {
			t.Errorf("web's authorized_keys: %q", keys)
		}
		if _, err := os.Lstat(filepath.Join(instance, "fs", "etc-systemd-system", "multi-user.target.wants", "web.service")); err != nil {
			t.Errorf("web.service is not enabled: %v", err)
		}
		// The footprint, from the node's own report.
		fp := f.lexicon(false, "nodes", "footprint", "web-1")
		for _, it := range fp["items"].([]any) {
			if it := it.(map[string]any); it["state"] != "changed" {
				t.Errorf("footprint item %v", it)
			}
		}
	}) {
		return
	}

	if !t.Run("second apply changes and fetches nothing", func(t *testing.T) {
		_, j := apply(t, 0)
		o := outputOf(t, j)
		if o.Result != "converged" || o.Counts.Changed != 0 || o.Counts.Failed != 0 || o.Fetched != 0 || o.Counts.Unchanged != len(o.Items) {
			t.Fatalf("second apply: fetched %d, %+v", o.Fetched, o)
		}
		if got, err := dial(8080); err != nil || got != webPage {
			t.Fatalf("the open port after the second apply: %q %v", got, err)
		}
	}) {
		return
	}

	t.Run("a unit that fails to start halts the staged apply", func(t *testing.T) {
		f.lexicon(false, "roles", "edit", "web", roleFile([2]string{"web.service", webUnit}, [2]string{"web-broken.service", brokenUnit}), "--base", "1")
		ro, j := apply(t, 8, "--canary", "1", "--stages", "100%") // ExitRolloutStopped
		reason := fmt.Sprint(ro["halt_reason"])
		if ro["state"] != "halted" || ro["halt_node"] != "web-1" || !strings.Contains(reason, "unit:web-broken.service") {
			t.Fatalf("the rollout: state %v, halted on %v: %s", ro["state"], ro["halt_node"], reason)
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
		fp := f.lexicon(false, "nodes", "footprint", "web-1")
		states := map[string]any{}
		for _, it := range fp["items"].([]any) {
			it := it.(map[string]any)
			states[fmt.Sprint(it["id"])] = it["state"]
		}
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
		// The rest of the node is as it was: the server still answers.
		if got, err := dial(8080); err != nil || got != webPage {
			t.Errorf("the open port after the halted apply: %q %v", got, err)
		}
	})
}

// sshKeyE2E is the web user's authorized key.
const sshKeyE2E = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl web@lexicon.test"

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
