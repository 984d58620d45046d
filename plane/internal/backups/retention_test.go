package backups_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/plane/internal/backups"
)

const day = 24 * time.Hour

// chains writes, for node, chains of runs at the given ages (days before e.now): each inner list is
// one chain, a full run and its incrementals. It returns the runs by chain.
func (e *env) chains(node string, ages ...[]int) [][]string {
	e.t.Helper()
	signer, err := presign.New(e.target())
	if err != nil {
		e.t.Fatal(err)
	}
	var out [][]string
	for _, chain := range ages {
		var runs []string
		var parent *backup.Index
		for _, age := range chain {
			at := e.now.Add(-time.Duration(age) * day)
			pr := ""
			if parent != nil {
				pr = parent.Header.Run
			}
			g, err := signer.WriteGrant(e.ctx, presign.WriteRequest{Node: node, Parent: pr, Recipients: []string{e.recovery.Recipient().String()},
				Objects: 16, Now: at})
			if err != nil {
				e.t.Fatal(err)
			}
			m, x := e.writeRun(g, parent, at)
			runs = append(runs, m.Run)
			parent = x
		}
		out = append(out, runs)
	}
	return out
}

// restorable checks that every run with a manifest has its whole chain's manifests and objects, at
// their sizes: nothing left in the bucket passes for a restore point that cannot restore. It returns
// the runs with a manifest.
func (e *env) restorable(node string) []string {
	e.t.Helper()
	have := e.srv.Manifests(e.t, e.target(), node)
	listing := map[string]bool{}
	for _, k := range e.srv.Keys(e.t, e.bucket, backup.NodePrefix("fleet", node)) {
		listing[k] = true
	}
	var runs []string
	for run := range have {
		chain, err := backup.ChainOf(have, run)
		if err != nil {
			e.t.Fatalf("run %s: %v", run, err)
		}
		for _, m := range chain {
			for _, o := range m.Objects {
				if !listing[o.Key] {
					e.t.Fatalf("run %s: object %s of %s is gone", run, o.Key, m.Run)
				}
			}
		}
		runs = append(runs, run)
	}
	slices.Sort(runs)
	return runs
}

// TestRetentionByChainsAndFloor: chains whose newest run is older than the policy keeps are removed
// whole, the newest chain never, and a policy shorter than the fleet's floor keeps the floor.
func TestRetentionByChainsAndFloor(t *testing.T) {
	e := newEnv(t)
	c := e.chains("web-1", []int{40, 39}, []int{20, 19, 18}, []int{10, 9}, []int{1})
	client, _ := presign.Client(e.target())

	// Keep 3 days, floor 15: the chain of days 10-9 stays (floor), those of 40 and 20 go.
	res, err := backups.Prune(e.ctx, client, e.target(), "web-1", 3*day, 15*day, e.now)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Chains, []string{c[0][0], c[1][0]}) {
		t.Fatalf("pruned %v, want the chains of %s and %s", res.Chains, c[0][0], c[1][0])
	}
	want := append(append([]string{}, c[2]...), c[3]...)
	if got := e.restorable("web-1"); !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
	for _, k := range e.srv.Keys(t, e.bucket, "fleet/web-1/") {
		if strings.Contains(k, c[0][0]) || strings.Contains(k, c[1][1]) {
			t.Fatalf("%s of a pruned chain is still there", k)
		}
	}

	// However old, the newest chain stays.
	e.now = e.now.Add(365 * day)
	if _, err := backups.Prune(e.ctx, client, e.target(), "web-1", 3*day, 15*day, e.now); err != nil {
		t.Fatal(err)
	}
	if got := e.restorable("web-1"); !slices.Equal(got, c[3]) {
		t.Fatalf("left %v, want the newest chain %v", got, c[3])
	}
}

// pruneHelperEnv carries the killed prune's settings to the helper process.
const pruneHelperEnv = "LEXICON_BACKUPS_PRUNE_HELPER"

type pruneHelper struct {
	Target    presign.Target
	Node      string
	Now       time.Time
	StopAfter int
}

// TestPruneHelper is the process the kill test kills: it prunes, and stops dead after StopAfter
// deletions, saying so on stdout.
func TestPruneHelper(t *testing.T) {
	raw := os.Getenv(pruneHelperEnv)
	if raw == "" {
		t.Skip("run by TestPlaneKilledMidPrune")
	}
	var h pruneHelper
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		t.Fatal(err)
	}
	client, _ := presign.Client(h.Target)
	n := 0
	_, err := backups.PruneWith(context.Background(), client, h.Target, h.Node, day, day, h.Now, func(string) {
		n++
		if n == h.StopAfter {
			os.Stdout.WriteString("stopped\n")
			select {} // held here until killed
		}
	})
	t.Fatalf("the prune ended (%v) before it was killed", err)
}

// TestPlaneKilledMidPrune: the plane killed (SIGKILL) after each number of deletions of a prune
// leaves no chain partly deleted that passes for a restore point, and the next prune finishes it.
func TestPlaneKilledMidPrune(t *testing.T) {
	for _, stop := range []int{1, 2, 4} {
		t.Run("after "+string(rune('0'+stop)), func(t *testing.T) {
			e := newEnv(t)
			c := e.chains("db-1", []int{30, 29, 28}, []int{2})
			cfg, _ := json.Marshal(pruneHelper{Target: e.target(), Node: "db-1", Now: e.now, StopAfter: stop})
			cmd := exec.Command(os.Args[0], "-test.run=^TestPruneHelper$", "-test.v")
			cmd.Env = append(os.Environ(), pruneHelperEnv+"="+string(cfg))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			stopped := false
			for sc.Scan() {
				if sc.Text() == "stopped" {
					stopped = true
					break
				}
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			if !stopped {
				t.Fatal("the helper never reached its stop")
			}
			left := e.restorable("db-1")
			for _, r := range left {
				if !slices.Contains(c[0], r) && !slices.Contains(c[1], r) {
					t.Fatalf("unknown run %s", r)
				}
			}
			client, _ := presign.Client(e.target())
			if _, err := backups.Prune(e.ctx, client, e.target(), "db-1", day, day, e.now); err != nil {
				t.Fatal(err)
			}
			if got := e.restorable("db-1"); !slices.Equal(got, c[1]) {
				t.Fatalf("after the next prune %v, want %v", got, c[1])
			}
			if keys := e.srv.Keys(t, e.bucket, "fleet/db-1/"); len(keys) != len(e.srv.Manifests(t, e.target(), "db-1")[c[1][0]].Objects)+1 {
				t.Fatalf("left %v", keys)
			}
		})
	}
}
