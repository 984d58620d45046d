package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
)

// TestSplitViewEndToEnd: a log shows two histories under one key. Two real agents each take a
// release from a different history (the first checkpoint of a log is taken on trust); the plane sees
// their views contradict each other and raises plane:log_split_view on both. Shown the other history,
// each agent refuses it with statement.log_inconsistent, with the proof the plane fetched from the log
// it reads (which joins its own history only) and without one; a release further along its own
// history it takes, with that proof.
func TestSplitViewEndToEnd(t *testing.T) {
	honest := tlogtest.New("log.lexicon.test")
	forked := honest.Fork() // before anything is logged: the two differ from their first entry
	honestSrv, forkedSrv := honest.Server(), forked.Server()
	defer honestSrv.Close()
	defer forkedSrv.Close()

	f := newFleet(t, "sqlite", fleetOptions{claimWait: "2s",
		serveArgs: []string{"--log-url", honestSrv.URL, "--reconcile-every", "1s"}})
	logKey := honest.PublicKey().String()
	must(t, os.MkdirAll(filepath.Join(f.planeData, "trust", "log_keys"), 0o755))
	must(t, keys.WritePublic(filepath.Join(f.planeData, "trust", "log_keys", "test.pub"), logKey))

	// Releases 2 and 4 in the honest history, 3 in the forked one.
	logged := func(seq int, url string) {
		out := filepath.Join(f.dir, fmt.Sprintf("release-%d", seq))
		run(t, false, "lexicon-release", "build", "--key", f.keyFile, "--modules", f.modules, "--release", fmt.Sprintf("1.%d.0", seq),
			"--sequence", fmt.Sprint(seq), "--out", out)
		run(t, false, "lexicon-release", "log", "--rekor", url, out)
		f.lexicon(false, "releases", "publish", out)
	}
	logged(2, honestSrv.URL)
	logged(3, forkedSrv.URL)

	// Each node holds the log key, so it refuses the unlogged release 1 the fleet starts on.
	var nodes []*agent
	for _, name := range []string{"web-1", "web-2"} {
		a := f.newAgent(name, acceptLookAndChange)
		must(t, os.MkdirAll(filepath.Join(a.config, "trust", "log_keys"), 0o755))
		must(t, keys.WritePublic(filepath.Join(a.config, "trust", "log_keys", "test.pub"), logKey))
		a.join()
		a.approve()
		a.p, _ = start(t, "lexicon-agent", append([]string{"run"}, a.dirs()...)...)
		f.planeLog.WaitFor(t, `"msg":"node cannot verify the plane's statement","node":"`+a.nodeID+`","reason":"statement.unlogged`)
		nodes = append(nodes, a)
	}
	a, b := nodes[0], nodes[1]
	deploy := func(seq int, who *agent) {
		t.Helper()
		f.startRollout("--release", fmt.Sprint(seq), "--selector", who.name, "--step-timeout", "1m")
	}
	took := func(who *agent, seq int) {
		t.Helper()
		f.planeLog.WaitFor(t, fmt.Sprintf(`"msg":"node took a statement","node":%q,"sequence":%d`, who.nodeID, seq))
	}
	refused := func(who *agent, reason string) {
		t.Helper()
		f.planeLog.WaitFor(t, `"msg":"node cannot verify the plane's statement","node":"`+who.nodeID+`","reason":"statement.log_inconsistent`)
		n := f.lexicon(false, "nodes", "show", who.nodeID)
		if u, _ := n["untrusted"].(string); !strings.Contains(u, reason) {
			t.Fatalf("%s: untrusted %q, want %q", who.name, u, reason)
		}
	}

	deploy(2, a)
	took(a, 2)
	deploy(3, b)
	took(b, 3)
	checkpointOf := func(who *agent) map[string]any {
		t.Helper()
		n := f.lexicon(false, "nodes", "show", who.nodeID)
		cps, _ := n["checkpoints"].([]any)
		if len(cps) != 1 {
			t.Fatalf("%s reports checkpoints %v", who.name, n["checkpoints"])
		}
		return cps[0].(map[string]any)
	}
	ca, cb := checkpointOf(a), checkpointOf(b)
	if ca["origin"] != "log.lexicon.test" || ca["size"] != float64(1) || cb["size"] != float64(1) || ca["root_hash"] == cb["root_hash"] {
		t.Fatalf("views: %v and %v", ca, cb)
	}
	for _, who := range nodes {
		f.planeLog.WaitFor(t, `"node":"`+who.nodeID+`","source":"plane:log_split_view"`)
	}
	inc := f.incidentsOf(a.nodeID)
	found := false
	for _, i := range inc {
		if i["source"] == "plane:log_split_view" && strings.Contains(fmt.Sprint(i["summary"]), "web-2") {
			found = true
		}
	}
	if !found {
		t.Fatalf("web-1's incidents: %v", inc)
	}

	// web-1 is shown the forked history: another root at the size it holds.
	deploy(3, a)
	refused(a, "signed two different roots")
	// Release 4 grows the honest history; web-1 takes it with the plane's proof, web-2 refuses it.
	logged(4, honestSrv.URL)
	deploy(4, a)
	took(a, 4)
	if got := checkpointOf(a); got["size"] != float64(2) {
		t.Fatalf("web-1 holds %v after release 4", got)
	}
	deploy(4, b)
	refused(b, "not proven a prefix")
}
