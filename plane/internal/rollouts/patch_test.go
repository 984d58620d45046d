package rollouts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var (
	patchDigest   = strings.Repeat("b", 64)
	reportDigest  = strings.Repeat("c", 64)
	restartDigest = strings.Repeat("e", 64)
)

// patchWords stands for the release catalog: every target pins the three package words.
type patchWords struct{}

func (patchWords) Words(context.Context, int64) (map[string]releases.Word, string, error) {
	return map[string]releases.Word{
		rollouts.PatchWord:   {Manifest: &manifest.Manifest{Name: rollouts.PatchWord, Class: manifest.ClassChange}, Module: patchDigest},
		rollouts.ReportWord:  {Manifest: &manifest.Manifest{Name: rollouts.ReportWord, Class: manifest.ClassLook}, Module: reportDigest},
		rollouts.RestartWord: {Manifest: &manifest.Manifest{Name: rollouts.RestartWord, Class: manifest.ClassChange}, Module: restartDigest},
	}, "", nil
}

func (patchWords) Agent(context.Context, int64) (string, error) { return "", nil }

// patchFixture is a fleet of simulated nodes, the rollouts room and an engine on a test clock.
type patchFixture struct {
	t     *testing.T
	st    store.Store
	url   string
	room  *rollouts.Room
	e     *rollouts.Engine
	clock *clock
	nodes map[string]store.Node // by name
}

// patchNode is a simulated node: its name, the address it joined with, whether it lacks the words,
// and whether it lacks restart_services only.
type patchNode struct {
	name, addr          string
	lacks, lacksRestart bool
}

func newPatchFixture(t *testing.T, backend string, nodes ...patchNode) *patchFixture {
	url := filepath.Join(t.TempDir(), "plane.db")
	if backend == "postgres" {
		url = storetest.PostgresURL(t)
	}
	st := storetest.Open(t, url)
	ctx := context.Background()
	bundle := []byte(`{"sequence":1}`)
	if _, err := st.ReleasePut(ctx, store.ReleasePutParams{Sequence: 1, Version: "1.0.0", StatementDigest: strings.Repeat("d", 64),
		Bundle: bundle, By: "publisher"}); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
	f := &patchFixture{t: t, st: st, url: url, clock: c, nodes: map[string]store.Node{}}
	for _, pn := range nodes {
		pub := keys.NewNode().Public()
		j, err := st.JoinCreate(ctx, store.JoinCreateParams{Name: pn.name, Key: pub.String(), Fingerprint: pub.Fingerprint(),
			Addresses: []string{pn.addr}, SourceAddress: pn.addr, MaxPending: 100, MaxPendingPerSource: 100})
		if err != nil {
			t.Fatal(err)
		}
		res, err := st.JoinApprove(ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: j.Join.Fingerprint, By: "test"})
		if err != nil {
			t.Fatal(err)
		}
		vocab := []store.WordRef{{Name: "noop", Version: "1.0.0", Digest: noopDigest, Class: "look"}}
		if !pn.lacks {
			vocab = append(vocab, store.WordRef{Name: rollouts.PatchWord, Version: "1.0.0", Digest: patchDigest, Class: "change"},
				store.WordRef{Name: rollouts.ReportWord, Version: "1.0.0", Digest: reportDigest, Class: "look"})
			if !pn.lacksRestart {
				vocab = append(vocab, store.WordRef{Name: rollouts.RestartWord, Version: "1.0.0", Digest: restartDigest, Class: "change"})
			}
		}
		n, err := st.NodeReport(ctx, store.NodeReportParams{ID: res.Node.ID, Vocabulary: vocab, Idle: true})
		if err != nil {
			t.Fatal(err)
		}
		f.nodes[pn.name] = n
	}
	f.room = rollouts.NewRoom(rollouts.RoomConfig{Store: st, Words: patchWords{}, Now: c.now, Log: slog.New(slog.DiscardHandler)})
	f.e = f.engine(st, "replica-a")
	return f
}

func (f *patchFixture) engine(st store.Store, holder string) *rollouts.Engine {
	return &rollouts.Engine{Store: st, Words: patchWords{},
		EngineBase: services.EngineBase{Holder: holder, Now: f.clock.now, LeaseTTL: time.Minute, Log: slog.New(slog.DiscardHandler)}}
}

func (f *patchFixture) get(id string) store.Rollout {
	f.t.Helper()
	ro, err := f.st.RolloutGet(context.Background(), store.RolloutGetParams{ID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	return ro
}

// agentAnswer is how a simulated agent ends one job: the node's name and the word in, the result out.
type agentAnswer func(node, word string) store.JobFinishParams

// answer claims and finishes every queued job as the agents would, returning "node:word" for each.
func (f *patchFixture) answer(how agentAnswer) []string {
	f.t.Helper()
	ctx := context.Background()
	res, err := f.st.JobList(ctx, store.JobListParams{State: store.JobQueued, Limit: store.MaxListLimit})
	if err != nil {
		f.t.Fatal(err)
	}
	var ran []string
	for _, j := range res.Jobs {
		got, err := f.st.JobClaim(ctx, store.JobClaimParams{NodeID: j.NodeID})
		if err != nil || got == nil {
			f.t.Fatalf("claim: %v %v", got, err)
		}
		name := f.name(j.NodeID)
		p := how(name, j.Word)
		p.ID, p.NodeID, p.Now = got.ID, j.NodeID, f.clock.now()
		if _, err := f.st.JobFinish(ctx, p); err != nil {
			f.t.Fatal(err)
		}
		ran = append(ran, name+":"+j.Word)
	}
	return ran
}

func (f *patchFixture) name(id string) string {
	for n, node := range f.nodes {
		if node.ID == id {
			return n
		}
	}
	return id
}

// patched answers as a node whose fixes all install: the report after shows none waiting.
func patched(string, string) store.JobFinishParams {
	return store.JobFinishParams{Outcome: store.JobCompleted, Output: json.RawMessage(`{"known":true,"security_upgrades":[{"name":"tzdata","installed":"1","candidate":"2","held":true}]}`)}
}

// jobsOf counts each node's jobs by word.
func (f *patchFixture) jobsOf(name string) map[string]int {
	f.t.Helper()
	res, err := f.st.JobList(context.Background(), store.JobListParams{NodeID: f.nodes[name].ID, Limit: store.MaxListLimit})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]int{}
	for _, j := range res.Jobs {
		out[j.Word]++
	}
	return out
}

var operator = api.Token{Name: "tok-operator", Role: api.RoleOperator}

// TestPatchCanaryThenRest: the canary node is patched, its services restarted and verified before any
// other node gets a job; the node lacking the words is left out by name; a node whose package manager
// was locked is passed with its note and never verified; a node lacking restart_services is patched
// and verified without a restart; the rest complete, each with one change, one restart and one report.
func TestPatchCanaryThenRest(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		f := newPatchFixture(t, backend, patchNode{"a", "192.0.2.1", false, false}, patchNode{"b", "192.0.2.2", false, false},
			patchNode{"c", "192.0.2.3", false, true}, patchNode{"old", "192.0.2.4", true, false})
		ctx := context.Background()
		out, err := f.room.Patch(ctx, operator, api.FleetPatchRequest{MaxParallel: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.LeftOut) != 1 || out.LeftOut[0].Node != "old" || !strings.Contains(out.LeftOut[0].Reason, "does not report the word install_security_updates") {
			t.Fatalf("left out %+v", out.LeftOut)
		}
		if out.Purpose != "patch" || len(out.Steps) != 3 || out.Steps[0].Stage != 0 || out.Steps[1].Stage != 1 || out.Steps[2].Stage != 1 {
			t.Fatalf("rollout %+v", out)
		}
		if ev := out.Events[0]; ev.Action != "start" || !strings.Contains(ev.Detail, "left out: old (") {
			t.Fatalf("start event %+v", ev)
		}
		answers := func(node, word string) store.JobFinishParams {
			if node == "b" && word == rollouts.PatchWord {
				return store.JobFinishParams{Outcome: store.JobFailed, Code: errcode.PkgLocked, Message: "another package run holds /var/lib/dpkg/lock-frontend (apt-get, pid 42)"}
			}
			return patched(node, word)
		}
		// The canary's change, restart and verify, before anyone else.
		var order []string
		for range 20 {
			if err := f.e.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			ran := f.answer(answers)
			order = append(order, ran...)
			f.clock.add(time.Second)
			if f.get(out.ID).State != store.RolloutRunning {
				break
			}
		}
		if len(order) < 3 || order[0] != "a:install_security_updates" || order[1] != "a:restart_services" || order[2] != "a:packages_report" {
			t.Fatalf("order %v", order)
		}
		ro := f.get(out.ID)
		if ro.State != store.RolloutCompleted || ro.Misses != 0 {
			t.Fatalf("rollout %s misses %d: %s", ro.State, ro.Misses, ro.HaltReason)
		}
		for _, st := range ro.Steps {
			if st.State != store.StepPassed {
				t.Fatalf("step %+v", st)
			}
			if st.NodeName == "b" && !strings.Contains(st.Reason, "not patched: pkg.locked: another package run") {
				t.Fatalf("locked step %+v", st)
			}
		}
		for name, want := range map[string]map[string]int{
			"a": {rollouts.PatchWord: 1, rollouts.RestartWord: 1, rollouts.ReportWord: 1}, "b": {rollouts.PatchWord: 1},
			"c": {rollouts.PatchWord: 1, rollouts.ReportWord: 1}, "old": {},
		} {
			if got := f.jobsOf(name); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s ran %v, want %v", name, got, want)
			}
		}
	})
}

// TestPatchHaltsNamingNodeAndPackage: a postinst failure on the canary halts the rollout naming the
// node and the package, and no other node is touched; a verify still showing a fix waiting halts
// naming the package too.
func TestPatchHaltsNamingNodeAndPackage(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		f := newPatchFixture(t, backend, patchNode{"a", "192.0.2.1", false, false}, patchNode{"b", "192.0.2.2", false, false})
		ctx := context.Background()
		out, err := f.room.Patch(ctx, operator, api.FleetPatchRequest{})
		if err != nil {
			t.Fatal(err)
		}
		fail := func(node, word string) store.JobFinishParams {
			return store.JobFinishParams{Outcome: store.JobFailed, Code: errcode.PkgFailed,
				Message: "the package run failed, leaving lexicon-fixture-broken half done: installed lexicon-fixture-broken package post-installation script subprocess returned error exit status 1"}
		}
		for range 5 {
			if err := f.e.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			f.answer(fail)
			f.clock.add(time.Second)
		}
		ro := f.get(out.ID)
		if ro.State != store.RolloutHalted || ro.HaltNode != "a" ||
			!strings.Contains(ro.HaltReason, "install_security_updates failed on a, package lexicon-fixture-broken: pkg.failed") {
			t.Fatalf("rollout %s at %q: %s", ro.State, ro.HaltNode, ro.HaltReason)
		}
		if got := f.jobsOf("b"); len(got) != 0 {
			t.Fatalf("b ran %v after the halt", got)
		}

		// A restart that fails halts too: the service may be down.
		r := newPatchFixture(t, backend, patchNode{"r", "192.0.2.8", false, false}, patchNode{"s", "192.0.2.7", false, false})
		out, err = r.room.Patch(ctx, operator, api.FleetPatchRequest{})
		if err != nil {
			t.Fatal(err)
		}
		restartFails := func(node, word string) store.JobFinishParams {
			if word == rollouts.RestartWord {
				return store.JobFinishParams{Outcome: store.JobFailed, Code: "restart_services.failed", Message: "lexfixd.service: failed"}
			}
			return patched(node, word)
		}
		for range 6 {
			if err := r.e.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			r.answer(restartFails)
			r.clock.add(time.Second)
		}
		ro = r.get(out.ID)
		if ro.State != store.RolloutHalted || ro.HaltNode == "" || !strings.Contains(ro.HaltReason, "restart restart_services failed: "+"restart_services.failed") {
			t.Fatalf("rollout %s at %q: %s", ro.State, ro.HaltNode, ro.HaltReason)
		}

		// Verify showing a fix still waiting.
		g := newPatchFixture(t, backend, patchNode{"x", "192.0.2.9", false, false})
		out, err = g.room.Patch(ctx, operator, api.FleetPatchRequest{Selector: "x"})
		if err != nil {
			t.Fatal(err)
		}
		waiting := func(node, word string) store.JobFinishParams {
			return store.JobFinishParams{Outcome: store.JobCompleted, Output: json.RawMessage(`{"known":true,"security_upgrades":[{"name":"openssl","installed":"3.0.1","candidate":"3.0.2"}]}`)}
		}
		for range 5 {
			if err := g.e.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			g.answer(waiting)
			g.clock.add(time.Second)
		}
		ro = g.get(out.ID)
		if ro.State != store.RolloutHalted || ro.HaltNode != "x" || !strings.Contains(ro.HaltReason, "security fixes still waiting: package openssl 3.0.1 -> 3.0.2") {
			t.Fatalf("rollout %s at %q: %s", ro.State, ro.HaltNode, ro.HaltReason)
		}
	})
}

// TestPatchRefusals: nothing patchable, and a bad selector, are refused with their codes and make
// nothing.
func TestPatchRefusals(t *testing.T) {
	f := newPatchFixture(t, "sqlite", patchNode{"old", "192.0.2.4", true, false}, patchNode{"a", "192.0.2.1", false, false})
	ctx := context.Background()
	_, err := f.room.Patch(ctx, operator, api.FleetPatchRequest{Selector: "old"})
	testkit.WantCode(t, err, errcode.RolloutEmptySelection)
	_, err = f.room.Patch(ctx, operator, api.FleetPatchRequest{Selector: "role=web"})
	testkit.WantCode(t, err, errcode.RolloutSelectorUnknownKey)
	_, err = f.room.Patch(ctx, api.Token{Name: "viewer", Role: api.RoleViewer}, api.FleetPatchRequest{})
	testkit.WantCode(t, err, errcode.AuthForbidden)
	if list, err := f.st.RolloutList(ctx, store.RolloutListParams{}); err != nil || len(list) != 0 {
		t.Fatalf("refusals made rollouts: %+v %v", list, err)
	}
}

// TestPatchOneNodeAMachine: two nodes that joined with the same addresses are one machine: with room
// for three at once, they are never patched together, while another machine's node is.
func TestPatchOneNodeAMachine(t *testing.T) {
	f := newPatchFixture(t, "sqlite", patchNode{"a", "192.0.2.1", false, false}, patchNode{"b1", "192.0.2.2", false, false},
		patchNode{"b2", "192.0.2.2", false, false}, patchNode{"c", "192.0.2.3", false, false})
	ctx := context.Background()
	out, err := f.room.Patch(ctx, operator, api.FleetPatchRequest{MaxParallel: 3})
	if err != nil {
		t.Fatal(err)
	}
	if out.Steps[1].Machine != out.Steps[2].Machine || out.Steps[1].Machine == out.Steps[3].Machine {
		t.Fatalf("machines %+v", out.Steps)
	}
	for range 20 {
		if err := f.e.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		ro := f.get(out.ID)
		if ro.Steps[1].State == store.StepRunning && ro.Steps[2].State == store.StepRunning {
			t.Fatalf("b1 and b2, one machine, patched at once")
		}
		if ro.State != store.RolloutRunning {
			break
		}
		f.answer(patched)
		f.clock.add(time.Second)
	}
	if ro := f.get(out.ID); ro.State != store.RolloutCompleted {
		t.Fatalf("rollout %s: %s", ro.State, ro.HaltReason)
	}
}

// TestPatchPlaneKilledMidPatch: the replica advancing a patch dies after queueing a node's change and
// after that node finished it; a new replica (its own store connection) takes the rollout over once
// the leases run out and finishes it: every node ran install_security_updates and packages_report
// exactly once. A pause between nodes stops the next node starting; resuming goes on.
func TestPatchPlaneKilledMidPatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		f := newPatchFixture(t, backend, patchNode{"a", "192.0.2.1", false, false}, patchNode{"b", "192.0.2.2", false, false},
			patchNode{"c", "192.0.2.3", false, false})
		ctx := context.Background()
		out, err := f.room.Patch(ctx, operator, api.FleetPatchRequest{})
		if err != nil {
			t.Fatal(err)
		}
		// Replica A queues the canary's change; the agent runs it; A dies before judging it.
		if err := f.e.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if ran := f.answer(patched); fmt.Sprint(ran) != "[a:install_security_updates]" {
			t.Fatalf("first pass ran %v", ran)
		}
		// Replica B, a fresh plane on the same database, cannot act until A's leases expire.
		peer := storetest.Open(t, f.url)
		b := f.engine(peer, "replica-b")
		if err := b.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if ro := f.get(out.ID); ro.Steps[0].Phase != store.PhaseChange {
			t.Fatalf("B moved the step under A's lease: %+v", ro.Steps[0])
		}
		f.clock.add(2 * time.Minute)
		// B judges the change A queued (without queueing another), verifies, and moves on.
		paused := false
		for range 30 {
			if err := b.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			ro := f.get(out.ID)
			if !paused && ro.Steps[0].Phase == store.PhaseVerify && ro.Steps[0].JobID != "" {
				// Stop between nodes: paused while the canary verifies, it is judged, nothing new starts.
				if _, err := f.room.Pause(ctx, operator, out.ID); err != nil {
					t.Fatal(err)
				}
				paused = true
				f.answer(patched)
				if err := b.Pass(ctx); err != nil {
					t.Fatal(err)
				}
				if ro := f.get(out.ID); ro.Steps[0].State != store.StepPassed || ro.Steps[1].State != store.StepPending {
					t.Fatalf("paused: %+v", ro.Steps[:2])
				}
				if ran := f.answer(patched); len(ran) != 0 {
					t.Fatalf("a paused patch ran %v", ran)
				}
				if _, err := f.room.Resume(ctx, operator, out.ID); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if ro.State != store.RolloutRunning {
				break
			}
			f.answer(patched)
			f.clock.add(time.Second)
		}
		ro := f.get(out.ID)
		if ro.State != store.RolloutCompleted || !paused {
			t.Fatalf("rollout %s (paused %v): %s", ro.State, paused, ro.HaltReason)
		}
		for _, name := range []string{"a", "b", "c"} {
			if got := f.jobsOf(name); got[rollouts.PatchWord] != 1 || got[rollouts.RestartWord] != 1 || got[rollouts.ReportWord] != 1 || len(got) != 3 {
				t.Fatalf("%s ran %v", name, got)
			}
		}
	})
}
