package e2e_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestInstallCommandOnNetns enrols a machine that exists already: `lexicon nodes install-command`
// prints one line, and the script it carries runs as the user data of a netns instance (the machine
// a person would paste it on): it fetches the pinned agent with its one-time token, checks its sha256,
// installs it and joins; the plane approves the join at once with the labels asked for, and a word
// runs on the node.
func TestInstallCommandOnNetns(t *testing.T) {
	needNamespaces(t)
	installCommand(t, "10.213.97.1", "10.213.97.0/24", "host", "")
}

// TestInstallCommandOnDebianRoot pastes the same command on a fresh Debian 12 (the root `make
// debian-root` builds with mmdebstrap, overlaid as the instance's own /): it must work with nothing but
// what a minimal Debian has (curl, sha256sum, install), and write its trust folder, policy and agent
// into that machine's root, not the host's.
func TestInstallCommandOnDebianRoot(t *testing.T) {
	t.Parallel() // waits mostly (on intervals, a browser, a machine): it overlaps the others that do
	needNamespaces(t)
	installCommand(t, "10.213.93.1", "10.213.93.0/24", "debian-12", apttest.DebianRoot(t))
}

// installCommand enrols a machine of the netns cloud's image (root: the image's machine root, "" for
// the host) through the install command.
func installCommand(t *testing.T, gateway, rng, image, root string) {
	f := netnsFleet(t, gateway, "1.2.0")
	tr := &testkit.Buffer{}
	defer func() {
		if t.Failed() {
			t.Logf("commands:\n%s", tr.String())
		}
	}()
	var state string
	if root == "" {
		state = f.netnsAccount(tr, "local", rng)
	} else {
		state = f.netnsAccount(tr, "local", rng, map[string]string{image: root})
	}
	ic := f.cli(tr, 0, "nodes", "install-command", "--labels", "role=db,env=e2e", "--expires", "10m")
	script := installScript(t, ic)
	// The node's name is the machine's host name unless LEXICON_NAME says otherwise: say it here.
	text := strings.Replace(string(script), "set -eu\n", "set -eu\nLEXICON_NAME=db-1\n", 1)
	userData := filepath.Join(f.dir, "install.sh")
	must(t, os.WriteFile(userData, []byte(text), 0o600))
	inst := f.cli(tr, 0, "cloud", "create", "--account", "local", "--region", "local", "--type", "ns-1", "--image", image,
		"--label", "db-1", "--user-data-file", userData)
	instanceID := inst["id"].(string)

	f.planeLog.WaitFor(t, `"msg":"join requested"`)
	joins := f.cli(tr, 0, "joins", "list", "--status", "approved")["joins"].([]any)
	if len(joins) != 1 || joins[0].(map[string]any)["decided_by"] != "enrolment:"+ic["id"].(string) {
		t.Fatalf("approved joins: %v", joins)
	}
	nodeID := joins[0].(map[string]any)["node_id"].(string)
	f.planeLog.WaitFor(t, `"msg":"node took a statement","node":"`+nodeID+`"`)
	n := f.cli(tr, 0, "nodes", "show", nodeID)
	labels, _ := n["labels"].(map[string]any)
	if labels["role"] != "db" || labels["env"] != "e2e" || n["agent_version"] != "1.2.0" || n["name"] != "db-1" {
		t.Errorf("node: %v", n)
	}
	out, err := os.ReadFile(filepath.Join(state, "instances", instanceID, "log", "cloud-init-output.log"))
	must(t, err)
	if !strings.Contains(string(out), ": OK") {
		t.Errorf("the script's log shows no passed sha256 check:\n%s", out)
	}
	if job := f.runJob(nodeID, "host_report"); job["state"] != "completed" {
		t.Fatalf("host_report on the enrolled node: %v", job)
	}
	if got := f.cli(tr, 0, "audit", "list", "--operation", "NodesInstallCommand"); len(got["events"].([]any)) != 1 {
		t.Errorf("the trail: %v", got)
	}
	if root != "" {
		// The agent, its trust folder and its policy are the instance's (its bound folders, under the
		// netns state, as on the host image); nothing was written into the image.
		fs := filepath.Join(state, "instances", instanceID, "fs")
		for _, p := range [][2]string{{"usr-local-bin/lexicon-agent", "/usr/local/bin/lexicon-agent"},
			{"etc-lexicon-agent/trust", "/etc/lexicon-agent/trust"}, {"etc-lexicon-agent/policy.json", "/etc/lexicon-agent/policy.json"}} {
			if _, err := os.Stat(filepath.Join(fs, p[0])); err != nil {
				t.Errorf("%s is not the instance's: %v", p[1], err)
			}
			if _, err := os.Stat(filepath.Join(root, p[1])); err == nil {
				t.Errorf("%s was written into the image", p[1])
			}
		}
	}
}

// installScript is the shell script an install command (`nodes install-command`'s answer) pipes to sh.
func installScript(t *testing.T, ic map[string]any) []byte {
	t.Helper()
	cmd, _ := ic["command"].(string)
	b64, ok := strings.CutPrefix(cmd, "echo ")
	b64, ok2 := strings.CutSuffix(b64, " | base64 -d | sh")
	script, err := base64.StdEncoding.DecodeString(b64)
	if !ok || !ok2 || err != nil {
		t.Fatalf("install command %v: %v", ic, err)
	}
	return script
}
