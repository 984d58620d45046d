package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
)

// rolloutServe makes the rollout engine look often and its leases short, so the tests wait on the
// engine's work and a dead replica's leases run out quickly.
var rolloutServe = []string{"--rollout-every", "200ms", "--lease-ttl", "3s"}

// fleetOf enrols n agents named prefix-1..n with policy, labelled role=web.
func (f *fleet) fleetOf(prefix string, n int, policy func(i int) string) []*agent {
	var out []*agent
	for i := 1; i <= n; i++ {
		a := f.enrol(fmt.Sprintf("%s-%d", prefix, i), policy(i))
		f.lexicon(false, "nodes", "label", a.name, "role=web", fmt.Sprintf("slot=%d", i))
		out = append(out, a)
	}
	return out
}

func accepting(int) string { return acceptLookAndChange }

// startRollout starts a rollout with the CLI and returns its id.
func (f *fleet) startRollout(args ...string) string {
	f.t.Helper()
	ro := f.lexicon(false, append([]string{"rollouts", "start"}, args...)...)
	return ro["id"].(string)
}

// waitRollout follows a rollout with rollouts show --wait until it stops, and returns it with the
// exit status the CLI gave.
func (f *fleet) waitRollout(id string) (map[string]any, int) {
	f.t.Helper()
	return f.lexiconStatus("rollouts", "show", id, "--wait")
}

type stepView struct {
	node, state, phase, reason, job string
	stage                           int
	started, finished               time.Time
}

func steps(ro map[string]any) []stepView {
	var out []stepView
	list, _ := ro["steps"].([]any)
	for _, s := range list {
		m := s.(map[string]any)
		v := stepView{node: fmt.Sprint(m["node_name"]), state: fmt.Sprint(m["state"]), stage: int(m["stage"].(float64))}
		v.phase, _ = m["phase"].(string)
		v.reason, _ = m["reason"].(string)
		v.job, _ = m["job_id"].(string)
		if t, ok := m["started_at"].(string); ok {
			v.started, _ = time.Parse(time.RFC3339Nano, t)
		}
		if t, ok := m["finished_at"].(string); ok {
			v.finished, _ = time.Parse(time.RFC3339Nano, t)
		}
		out = append(out, v)
	}
	return out
}

// maxOverlap is the most steps that ran at one instant.
func maxOverlap(st []stepView) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, s := range st {
		if !s.started.IsZero() {
			edges = append(edges, edge{s.started, 1}, edge{s.finished, -1})
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta
		}
		return edges[i].at.Before(edges[j].at)
	})
	n, best := 0, 0
	for _, e := range edges {
		n += e.delta
		best = max(best, n)
	}
	return best
}

// TestRolloutCanaryThenTheRest: six real agents, a canary of one, then the rest with at most two at
// once; every step passes, and the canary ended before any other node started.
func TestRolloutCanaryThenTheRest(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{serveArgs: rolloutServe})
		f.fleetOf("web", 6, accepting)
		id := f.startRollout("--word", "e2e_spin", "--param", "attack=counter", "--selector", "role=web",
			"--canary", "1", "--stages", "100%", "--max-parallel", "2")
		ro, status := f.waitRollout(id)
		if status != 0 || ro["state"] != "completed" {
			t.Fatalf("rollout ended %v with exit status %d: %v", ro["state"], status, ro)
		}
		st := steps(ro)
		if len(st) != 6 {
			t.Fatalf("steps %v", st)
		}
		for _, s := range st {
			if s.state != "passed" || s.job == "" || s.finished.IsZero() {
				t.Fatalf("step %+v did not pass", s)
			}
			if j := f.job(s.job); j["state"] != "completed" || !strings.Contains(fmt.Sprint(j["created_by"]), id) {
				t.Fatalf("job of %s: %v", s.node, j)
			}
		}
		if st[0].stage != 0 || st[1].stage != 1 {
			t.Fatalf("stages %v", st)
		}
		for _, s := range st[1:] {
			if s.started.Before(st[0].finished) {
				t.Fatalf("%s started at %s, before the canary passed at %s", s.node, s.started, st[0].finished)
			}
		}
		if n := maxOverlap(st); n > 2 {
			t.Fatalf("%d nodes changed at once, max-parallel is 2", n)
		}
		if ev := ro["events"].([]any); ev[0].(map[string]any)["actor"] != "e2e-admin" {
			t.Fatalf("the start is not audited with who asked: %v", ev)
		}
	})
}

// TestRolloutPreflightHaltsAndResumes: a failing preflight on the third node halts the rollout there
// with the preflight's reason; the fourth node is never started; once the cause is fixed, resume
// completes it.
func TestRolloutPreflightHaltsAndResumes(t *testing.T) {
	f := newFleet(t, "sqlite", fleetOptions{serveArgs: rolloutServe})
	refuseLook := `{"classes": {"look": "refuse", "change": "accept", "destructive": "refuse"}}`
	agents := f.fleetOf("web", 4, func(i int) string {
		if i == 3 {
			return refuseLook
		}
		return acceptLookAndChange
	})
	id := f.startRollout("--word", "e2e_spin", "--param", "attack=counter", "--preflight", "host_report",
		"--stage", "web-1", "--stage", "web-2,web-3,web-4", "--max-parallel", "1")
	ro, status := f.waitRollout(id)
	if status != 8 || ro["state"] != "halted" || ro["halt_node"] != "web-3" || !strings.Contains(fmt.Sprint(ro["halt_reason"]), "policy.refused") {
		t.Fatalf("rollout: exit status %d, %v", status, ro)
	}
	st := steps(ro)
	if st[2].state != "failed" || st[2].phase != "preflight" || !strings.Contains(st[2].reason, "preflight host_report refused") {
		t.Fatalf("the third node's step: %+v", st[2])
	}
	if st[3].state != "pending" || !st[3].started.IsZero() {
		t.Fatalf("the fourth node was started: %+v", st[3])
	}
	if jobs := f.lexicon(false, "jobs", "list", "--node", "web-4"); len(jobs["jobs"].([]any)) != 0 {
		t.Fatalf("web-4 got jobs: %v", jobs)
	}
	// The cause is fixed: web-3 accepts look words again.
	a := agents[2]
	a.p.stop()
	must(t, os.WriteFile(filepath.Join(a.config, "policy.json"), []byte(acceptLookAndChange), 0o644))
	a.start()
	f.lexicon(false, "rollouts", "resume", id)
	ro, status = f.waitRollout(id)
	if status != 0 || ro["state"] != "completed" {
		t.Fatalf("resumed rollout: exit status %d, %v", status, ro)
	}
	var actions []string
	for _, e := range ro["events"].([]any) {
		actions = append(actions, fmt.Sprint(e.(map[string]any)["action"]))
	}
	if got := strings.Join(actions, ","); got != "start,halt,resume,complete" {
		t.Fatalf("audit %s", got)
	}
}

// TestReleaseRolloutStagesAndRevert: publishing offers release 2 and moves nobody; a rollout moves the
// targets of the web nodes stage by stage, each taking the new vocabulary; the db node keeps release 1
// and its vocabulary; revert is refused until the publisher re-issued release 1 under a new sequence,
// then moves the web nodes to it, and the agents run release 1's vocabulary again.
func TestReleaseRolloutStagesAndRevert(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		f := newFleet(t, backend, fleetOptions{serveArgs: rolloutServe})
		web := f.fleetOf("web", 2, accepting)
		db := f.enrol("db-1", acceptLookAndChange)
		// Release 2 adds a word.
		m := strings.Replace(spinManifest, `"name": "e2e_spin"`, `"name": "e2e_spin_two"`, 1)
		m = strings.Replace(m, `"file": "e2e_spin.wasm"`, `"file": "e2e_spin_two.wasm"`, 1)
		stage(t, f.modules, "e2e_spin_two", []byte(m), filepath.Join(root, "build", "wasm", "testdata", "evil.wasm"), "e2e_spin_two.wasm")
		f.publishRelease(2)
		for _, a := range append(web, db) {
			if n := f.lexicon(false, "nodes", "show", a.name); n["target_sequence"] != float64(1) {
				t.Fatalf("publishing moved %s: %v", a.name, n["target_sequence"])
			}
		}
		// The verify word runs under the new release, once the node took it.
		id := f.startRollout("--release", "2", "--selector", "role=web", "--stage", "web-1", "--stage", "web-2",
			"--verify", "e2e_spin_two", "--verify-param", "attack=counter")
		ro, status := f.waitRollout(id)
		if status != 0 || ro["state"] != "completed" {
			t.Fatalf("release rollout: exit status %d, %v", status, ro)
		}
		st := steps(ro)
		for _, s := range st {
			if s.phase != "verify" || s.job == "" || f.job(s.job)["word"] != "e2e_spin_two" {
				t.Fatalf("%s passed without its verify word: %+v", s.node, s)
			}
		}
		if st[1].started.Before(st[0].finished) {
			t.Fatalf("stage 2 started before stage 1 passed: %+v", st)
		}
		for _, a := range web {
			n := f.lexicon(false, "nodes", "show", a.name)
			if n["target_sequence"] != float64(2) || n["statement_sequence"] != float64(2) || !hasWord(n, "e2e_spin_two") {
				t.Fatalf("%s after the rollout: %v", a.name, n)
			}
		}
		n := f.lexicon(false, "nodes", "show", db.name)
		if n["target_sequence"] != float64(1) || n["statement_sequence"] != float64(1) || hasWord(n, "e2e_spin_two") {
			t.Fatalf("db-1, outside the rollout, moved: %v", n)
		}
		// Agents refuse a statement older than one they took, and the plane cannot sign: until the
		// publisher re-issues release 1 under a new sequence, revert moves nothing and says what to run.
		out, status := f.lexiconStatus("rollouts", "revert", id)
		if msg := fmt.Sprint(out["message"]); status != 1 || errCode(out) != "rollout.revert_needs_reissue" ||
			!strings.Contains(msg, "lexicon-release renew") || !strings.Contains(msg, "RELEASE_1_DIR --sequence 3") {
			t.Fatalf("revert before a re-issue: exit status %d, %v", status, out)
		}
		for _, a := range web {
			if n := f.lexicon(false, "nodes", "show", a.name); n["target_sequence"] != float64(2) {
				t.Fatalf("a refused revert moved %s: %v", a.name, n["target_sequence"])
			}
		}
		if ro := f.lexicon(false, "rollouts", "show", id); ro["state"] != "completed" {
			t.Fatalf("a refused revert changed the rollout: %v", ro["state"])
		}
		// The publisher signs release 1's content again as sequence 3; publishing it moves nobody.
		reissue := filepath.Join(f.dir, "release-1-again")
		run(t, false, "lexicon-release", "renew", "--key", f.keyFile, "--previous", filepath.Join(f.dir, "release"), "--sequence", "3", "--out", reissue)
		f.lexicon(false, "releases", "publish", reissue)
		rev := f.lexicon(false, "rollouts", "revert", id)
		if rev["state"] != "reverted" || len(rev["moved"].([]any)) != 2 {
			t.Fatalf("revert: %v", rev)
		}
		// The reached agents take it, and with it the vocabulary of release 1 again.
		for _, a := range web {
			f.planeLog.WaitFor(t, `"msg":"node took a statement","node":"`+a.nodeID+`","sequence":3`)
			n := f.lexicon(false, "nodes", "show", a.name)
			if n["target_sequence"] != float64(3) || n["statement_sequence"] != float64(3) || hasWord(n, "e2e_spin_two") || !hasWord(n, "e2e_spin") {
				t.Fatalf("%s after revert: %v", a.name, n)
			}
		}
		if n := f.lexicon(false, "nodes", "show", db.name); n["target_sequence"] != float64(1) || n["statement_sequence"] != float64(1) {
			t.Fatalf("db-1, outside the rollout, moved on revert: %v", n)
		}
		var actions []string
		for _, e := range rev["events"].([]any) {
			actions = append(actions, fmt.Sprint(e.(map[string]any)["action"]), fmt.Sprint(e.(map[string]any)["detail"]))
		}
		if got := strings.Join(actions, ","); !strings.Contains(got, "revert,2 nodes moved back to release 3 (release 1 re-issued)") {
			t.Fatalf("audit %s", got)
		}
	})
}

func hasWord(n map[string]any, name string) bool {
	for _, w := range n["vocabulary"].([]any) {
		if w.(map[string]any)["name"] == name {
			return true
		}
	}
	return false
}

// TestRolloutSurvivesPlaneRestart: the plane is stopped after the first node passed and started again
// on the same store; the rollout goes on from its record and completes, each node changed once.
func TestRolloutSurvivesPlaneRestart(t *testing.T) {
	f := newFleet(t, "sqlite", fleetOptions{serveArgs: rolloutServe, claimWait: "2s"})
	f.fleetOf("web", 3, accepting)
	id := f.startRollout("--word", "e2e_spin", "--param", "attack=counter", "--stage", "web-1", "--stage", "web-2,web-3")
	f.planeLog.WaitFor(t, `"msg":"rollout step passed","rollout":"`+id+`","node":"web-1"`)
	f.plane.stop()
	f.listen = strings.TrimPrefix(f.url, "https://") // the agents know this address
	f.startPlane("2s")
	ro, status := f.waitRollout(id)
	if status != 0 || ro["state"] != "completed" {
		t.Fatalf("rollout after restart: exit status %d, %v", status, ro)
	}
	f.oneJobEach(ro, id)
}

// oneJobEach fails the test unless each node of the rollout ran exactly one of its jobs.
func (f *fleet) oneJobEach(ro map[string]any, id string) {
	f.t.Helper()
	for _, s := range steps(ro) {
		jobs := f.lexicon(false, "jobs", "list", "--node", s.node)
		n := 0
		for _, j := range jobs["jobs"].([]any) {
			if strings.Contains(fmt.Sprint(j.(map[string]any)["created_by"]), id) {
				n++
			}
		}
		if n != 1 {
			f.t.Fatalf("%s ran %d jobs of rollout %s", s.node, n, id)
		}
	}
}

// TestRolloutTwoReplicasAndAKilledOne: two planes advance the same rollouts on one PostgreSQL; the
// replica holding the rollout's lease is killed mid-rollout; the other takes its leases over once
// they expire, and the rollout completes with no node started twice.
func TestRolloutTwoReplicasAndAKilledOne(t *testing.T) {
	f := newFleet(t, "postgres", fleetOptions{serveArgs: rolloutServe, claimWait: "2s"})
	// The first replica holds the rollout from its start (it is started through it) and renews the
	// lease every pass; the agents talk to the second, which must carry the rollout on once the first
	// is killed.
	g := *f
	g.planeData = filepath.Join(f.dir, "plane-2")
	g.serveArgs = []string{"--rollout-every", "1s", "--lease-ttl", "3s"}
	run(t, false, "lexicon-release", "trust", "init", "--out", filepath.Join(g.planeData, "trust"), "--key", f.pubFile)
	g.startPlane("2s")
	g.fleetOf("web", 4, accepting)
	id := f.startRollout("--word", "e2e_spin", "--param", "attack=counter", "--max-parallel", "1")
	f.planeLog.WaitFor(t, `"msg":"rollout step passed","rollout":"`+id+`"`)
	// Kill the replica that holds the rollout.
	st, err := open.URL(context.Background(), f.store)
	must(t, err)
	defer st.Close()
	leases, err := st.LeaseList(context.Background(), store.LeaseListParams{Subject: id})
	must(t, err)
	if len(leases) != 1 {
		t.Fatalf("rollout leases %v", leases)
	}
	if !strings.Contains(f.plane.log(), leases[0].Holder) {
		t.Fatalf("the rollout is held by %s, not the first replica", leases[0].Holder)
	}
	victim, survivor := f, &g
	victim.plane.kill()
	ro, status := survivor.waitRollout(id)
	if status != 0 || ro["state"] != "completed" {
		t.Fatalf("rollout after a replica died: exit status %d, %v", status, ro)
	}
	after, err := st.LeaseList(context.Background(), store.LeaseListParams{Subject: id})
	must(t, err)
	if len(after) == 1 && after[0].Holder == leases[0].Holder {
		t.Fatalf("the killed replica still holds the rollout: %v", after)
	}
	survivor.oneJobEach(ro, id)
}

// TestRolloutNodeKilledMidStep: the agent running a node's change is killed and comes back; its job is
// lost, which is a miss: the rollout halts naming the node, and the node after it never starts.
func TestRolloutNodeKilledMidStep(t *testing.T) {
	f := newFleet(t, "sqlite", fleetOptions{serveArgs: rolloutServe})
	agents := f.fleetOf("web", 2, accepting)
	id := f.startRollout("--word", "e2e_spin", "--param", "attack=sleep", "--max-parallel", "1")
	f.planeLog.WaitFor(t, `"msg":"job handed out"`)
	a := agents[0]
	a.p.kill()
	a.start() // claims idle: the job it ran is lost
	ro, status := f.waitRollout(id)
	if status != 8 || ro["halt_node"] != "web-1" || !strings.Contains(fmt.Sprint(ro["halt_reason"]), "lost") {
		t.Fatalf("rollout: exit status %d, %v", status, ro)
	}
	if st := steps(ro); st[1].state != "pending" {
		t.Fatalf("web-2 was started: %+v", st[1])
	}
}

// TestRolloutBadInput: each refusal has its code, and no rollout is made.
func TestRolloutBadInput(t *testing.T) {
	f := newFleet(t, "sqlite", fleetOptions{serveArgs: rolloutServe})
	f.fleetOf("web", 2, accepting)
	for _, c := range []struct {
		code string
		args []string
	}{
		{"rollout.selector_unknown_key", []string{"--word", "e2e_spin", "--param", "attack=counter", "--selector", "tier=web"}},
		{"rollout.empty_selection", []string{"--word", "e2e_spin", "--param", "attack=counter", "--selector", "role=db"}},
		{"rollout.stages_incomplete", []string{"--word", "e2e_spin", "--param", "attack=counter", "--stage", "web-1"}},
		{"rollout.stages_incomplete", []string{"--word", "e2e_spin", "--param", "attack=counter", "--canary", "1", "--stages", "50%"}},
		{"rollout.word_not_in_release", []string{"--word", "no_such_word"}},
		{"rollout.word_not_in_release", []string{"--word", "e2e_spin", "--param", "attack=counter", "--preflight", "no_such_word"}},
		{"word.param_invalid", []string{"--word", "e2e_spin", "--param", "attack=fly"}},
		{"release.not_found", []string{"--release", "7"}},
	} {
		out, status := f.lexiconStatus(append([]string{"rollouts", "start"}, c.args...)...)
		if status != 1 || errCode(out) != c.code {
			t.Fatalf("rollouts start %v: exit status %d, %v; want %s", c.args, status, out, c.code)
		}
	}
	if l := f.lexicon(false, "rollouts", "list"); len(l["rollouts"].([]any)) != 0 {
		t.Fatalf("a refused start made a rollout: %v", l)
	}
}

// TestReleaseRolloutHaltKeepsLaterStages: a release rollout whose verify word the first stage's node
// refuses halts there; the next stage's node is never reached and keeps release 1 and its vocabulary;
// the halt is a plane:rollout_halted incident until the rollout is reverted, which takes the reached
// node to the publisher's re-issue of release 1.
func TestReleaseRolloutHaltKeepsLaterStages(t *testing.T) {
	f := newFleet(t, "sqlite", fleetOptions{serveArgs: append([]string{"--reconcile-every", "300ms"}, rolloutServe...)})
	refuseLook := `{"classes": {"look": "refuse", "change": "accept", "destructive": "refuse"}}`
	web := f.fleetOf("web", 2, func(i int) string {
		if i == 1 {
			return refuseLook
		}
		return acceptLookAndChange
	})
	m := strings.Replace(spinManifest, `"name": "e2e_spin"`, `"name": "e2e_spin_two"`, 1)
	m = strings.Replace(m, `"file": "e2e_spin.wasm"`, `"file": "e2e_spin_two.wasm"`, 1)
	stage(t, f.modules, "e2e_spin_two", []byte(m), filepath.Join(root, "build", "wasm", "testdata", "evil.wasm"), "e2e_spin_two.wasm")
	f.publishRelease(2)
	id := f.startRollout("--release", "2", "--selector", "role=web", "--stage", "web-1", "--stage", "web-2",
		"--verify", "e2e_spin_two", "--verify-param", "attack=counter")
	ro, status := f.waitRollout(id)
	if status != 8 || ro["state"] != "halted" || ro["halt_node"] != "web-1" || !strings.Contains(fmt.Sprint(ro["halt_reason"]), "verify e2e_spin_two refused") {
		t.Fatalf("rollout: exit status %d, %v", status, ro)
	}
	if st := steps(ro); st[1].state != "pending" || !st[1].started.IsZero() {
		t.Fatalf("web-2 was started: %+v", st[1])
	}
	if n := f.lexicon(false, "nodes", "show", "web-1"); n["target_sequence"] != float64(2) || n["statement_sequence"] != float64(2) {
		t.Fatalf("web-1, reached: %v", n)
	}
	if n := f.lexicon(false, "nodes", "show", "web-2"); n["target_sequence"] != float64(1) || n["statement_sequence"] != float64(1) || hasWord(n, "e2e_spin_two") {
		t.Fatalf("web-2, never reached, moved: %v", n)
	}
	f.planeLog.WaitFor(t, `"source":"plane:rollout_halted","subject":"`+id+`","severity":"warning","condition":"open"`)
	reissue := filepath.Join(f.dir, "release-1-again")
	run(t, false, "lexicon-release", "renew", "--key", f.keyFile, "--previous", filepath.Join(f.dir, "release"), "--sequence", "3", "--out", reissue)
	f.lexicon(false, "releases", "publish", reissue)
	if rev := f.lexicon(false, "rollouts", "revert", id); rev["state"] != "reverted" || fmt.Sprint(rev["moved"]) != "[web-1]" {
		t.Fatalf("revert: %v", rev)
	}
	f.planeLog.WaitFor(t, `"msg":"node took a statement","node":"`+web[0].nodeID+`","sequence":3`)
	f.planeLog.WaitFor(t, `"source":"plane:rollout_halted","subject":"`+id+`","severity":"warning","condition":"cleared"`)
	if n := f.lexicon(false, "nodes", "show", "web-1"); n["statement_sequence"] != float64(3) || hasWord(n, "e2e_spin_two") {
		t.Fatalf("web-1 after the revert: %v", n)
	}
	if n := f.lexicon(false, "nodes", "show", "web-2"); n["target_sequence"] != float64(1) {
		t.Fatalf("web-2 moved on revert: %v", n)
	}
}
