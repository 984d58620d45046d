package e2e_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestInstallCommandOnNetns enrols a machine that exists already: `lexicon nodes install-command`
// prints one line, and the script it carries runs as the user data of a netns instance (the machine
// a person would paste it on): it fetches the pinned agent with its one-time token, checks its sha256,
// installs it and joins; the plane approves the join at once with the labels asked for, and a word
// runs on the node.
func TestInstallCommandOnNetns(t *testing.T) {
	needNamespaces(t)
	const gateway, rng = "10.213.92.1", "10.213.92.0/24"
	f := netnsFleet(t, gateway, "1.2.0")
	tr := &testkit.Buffer{}
	defer func() {
		if t.Failed() {
			t.Logf("commands:\n%s", tr.String())
		}
	}()
	state := f.netnsAccount(tr, "local", rng)
	ic := f.cli(tr, 0, "nodes", "install-command", "--labels", "role=db,env=e2e", "--expires", "10m")
	cmd, _ := ic["command"].(string)
	b64, ok := strings.CutPrefix(cmd, "echo ")
	b64, ok2 := strings.CutSuffix(b64, " | base64 -d | sh")
	script, err := base64.StdEncoding.DecodeString(b64)
	if !ok || !ok2 || err != nil {
		t.Fatalf("install command %v: %v", ic, err)
	}
	// The node's name is the machine's host name unless LEXICON_NAME says otherwise: say it here.
	text := strings.Replace(string(script), "set -eu\n", "set -eu\nLEXICON_NAME=db-1\n", 1)
	userData := filepath.Join(f.dir, "install.sh")
	must(t, os.WriteFile(userData, []byte(text), 0o600))
	inst := f.cli(tr, 0, "cloud", "create", "--account", "local", "--region", "local", "--type", "ns-1", "--image", "host",
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
}
