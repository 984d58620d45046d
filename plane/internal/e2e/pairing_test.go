package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPairingEnds covers every way a pairing ends: a rejected join retires its key and the next join
// comes with a fresh one; the plane's disconnect stops the agent; the agent's leave is one signed
// goodbye.
func TestPairingEnds(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{claimWait: "1s"})

		// Rejected: the key is retired on the agent, and the plane never takes it again.
		a := f.newAgent("rejected-1", acceptLookAndChange)
		a.join()
		rejected := a.fingerprint
		if res := f.lexicon(false, "joins", "reject", a.joinID); res["status"] != "rejected" {
			t.Fatalf("reject: %v", res)
		}
		st := runJSON(t, true, "lexicon-agent", append([]string{"status"}, a.dirs()...)...)
		if st["code"] != "agent.join_rejected" {
			t.Fatalf("status after rejection: %v", st)
		}
		if _, err := os.Stat(filepath.Join(a.state, "node.key")); !os.IsNotExist(err) {
			t.Fatalf("the rejected key is still on the machine: %v", err)
		}
		a.join()
		if a.fingerprint == rejected {
			t.Fatal("the next join reused the rejected key")
		}
		a.approve()

		// Disconnected by the plane: the running agent stops claiming, keeps its recipes, and says to
		// join again.
		a.start()
		if res := f.lexicon(false, "nodes", "disconnect", a.nodeID); res["node"].(map[string]any)["state"] != "disconnected" {
			t.Fatalf("disconnect: %v", res)
		}
		a.p.logged(t, "the plane ended this node's pairing; running recipes only") // it stops claiming
		select {
		case <-a.p.done:
			t.Fatalf("the agent exited instead of keeping its recipes:\n%s", a.p.log())
		default:
		}
		if !strings.Contains(a.p.log(), "join again") {
			t.Fatalf("the agent did not say what to do:\n%s", a.p.log())
		}
		a.p.stop()

		// Left: one signed goodbye ends the pairing from the agent's side.
		b := f.enrol("leaving-1", acceptLookAndChange)
		b.p.stop()
		if res := runJSON(t, false, "lexicon-agent", append([]string{"leave"}, b.dirs()...)...); res["state"] != "left" {
			t.Fatalf("leave: %v", res)
		}
		if n := f.lexicon(false, "nodes", "show", b.nodeID); n["state"] != "left" {
			t.Fatalf("node after leave: %v", n["state"])
		}
		if job := f.lexicon(true, "jobs", "run", b.nodeID, "host_report"); job["code"] == nil {
			t.Fatalf("a job for a node that left: %v", job)
		}
	})
}
