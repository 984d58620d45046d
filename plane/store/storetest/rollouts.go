package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var rolloutTests = []test{
	{"Label/SetRemoveAndRefuse", func(f *fx) {
		n := f.node("web-1")
		if len(n.Labels) != 0 {
			f.Fatalf("a new node carries labels %v", n.Labels)
		}
		got, err := f.s.NodeLabel(f.ctx, store.NodeLabelParams{ID: n.ID, Set: map[string]string{"role": "web", "zone": "a"}})
		noErr(f, err, "NodeLabel")
		same(f, "labels", got.Labels, map[string]string{"role": "web", "zone": "a"})
		got, err = f.s.NodeLabel(f.ctx, store.NodeLabelParams{ID: n.ID, Set: map[string]string{"zone": "b"}, Remove: []string{"role"}})
		noErr(f, err, "NodeLabel")
		same(f, "labels", f.getNode(n.ID).Labels, map[string]string{"zone": "b"})
		for _, bad := range []map[string]string{{"Role": "x"}, {"role": "a,b"}, {"role": "a=b"}, {"role": ""}} {
			_, err := f.s.NodeLabel(f.ctx, store.NodeLabelParams{ID: n.ID, Set: bad})
			testkit.WantCode(f, err, errcode.StoreParamInvalid)
		}
		// A label set that would take the node past MaxLabels is the node's own refusal: whether it is
		// too many depends on what the node already carries, which only the store sees.
		many := map[string]string{}
		for i := range store.MaxLabels {
			many[fmt.Sprintf("k%d", i)] = "v"
		}
		_, err = f.s.NodeLabel(f.ctx, store.NodeLabelParams{ID: n.ID, Set: many})
		testkit.WantCode(f, err, errcode.NodeLabelInvalid)
		same(f, "labels after refusals", f.getNode(n.ID).Labels, got.Labels)
		_, err = f.s.NodeLabel(f.ctx, store.NodeLabelParams{ID: "node_missing", Set: map[string]string{"a": "b"}})
		testkit.WantCode(f, err, errcode.NodeNotFound)
	}},
	{"Target/FirstReleaseReachesAllThenOnlyRollouts", func(f *fx) {
		early := f.node("early")
		if early.TargetSequence != 0 {
			f.Fatalf("target before any release: %d", early.TargetSequence)
		}
		_, err := f.s.ReleasePut(f.ctx, f.release(1))
		noErr(f, err, "ReleasePut 1")
		if got := f.getNode(early.ID).TargetSequence; got != 1 {
			f.Fatalf("the first release did not reach the node: target %d", got)
		}
		_, err = f.s.ReleasePut(f.ctx, f.release(2))
		noErr(f, err, "ReleasePut 2")
		if got := f.getNode(early.ID).TargetSequence; got != 1 {
			f.Fatalf("publishing moved the node's target to %d", got)
		}
		late := f.node("late")
		if late.TargetSequence != 1 {
			f.Fatalf("a new node got target %d, want the fleet's 1", late.TargetSequence)
		}
		res, err := f.s.NodeTargetSet(f.ctx, store.NodeTargetSetParams{ID: early.ID, Sequence: 2})
		noErr(f, err, "NodeTargetSet")
		if res.Previous != 1 || res.Node.TargetSequence != 2 {
			f.Fatalf("NodeTargetSet: previous %d, now %d", res.Previous, res.Node.TargetSequence)
		}
		_, err = f.s.NodeTargetSet(f.ctx, store.NodeTargetSetParams{ID: early.ID, Sequence: 9})
		testkit.WantCode(f, err, errcode.ReleaseNotFound)
		noErr(f, f.s.FleetTargetSet(f.ctx, store.FleetTargetSetParams{Sequence: 2, By: "admin"}), "FleetTargetSet")
		if seq, err := f.s.FleetTarget(f.ctx); err != nil || seq != 2 {
			f.Fatalf("FleetTarget: %d, %v", seq, err)
		}
		if got := f.node("later").TargetSequence; got != 2 {
			f.Fatalf("a node joining after the fleet moved got target %d", got)
		}
	}},
	{"Lease/GrantRenewExpireRelease", func(f *fx) {
		p := store.LeaseAcquireParams{Subject: "node_a", Name: store.LeaseChange, Holder: "replica-1", Purpose: "rollout ro_1", TTL: time.Minute, Now: f.at(0)}
		l, err := f.s.LeaseAcquire(f.ctx, p)
		noErr(f, err, "LeaseAcquire")
		if l.Holder != "replica-1" || !l.ExpiresAt.Equal(f.at(time.Minute)) {
			f.Fatalf("lease %+v", l)
		}
		other := p
		other.Holder, other.Now = "replica-2", f.at(30*time.Second)
		_, err = f.s.LeaseAcquire(f.ctx, other)
		testkit.WantCode(f, err, errcode.LeaseHeld)
		// The holder asking again renews it.
		p.Now = f.at(50 * time.Second)
		l, err = f.s.LeaseAcquire(f.ctx, p)
		noErr(f, err, "LeaseAcquire again")
		if !l.ExpiresAt.Equal(f.at(110*time.Second)) || !l.AcquiredAt.Equal(f.at(0)) {
			f.Fatalf("renewed lease %+v", l)
		}
		_, err = f.s.LeaseRenew(f.ctx, store.LeaseRenewParams{Subject: "node_a", Name: store.LeaseChange, Holder: "replica-2", TTL: time.Minute, Now: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.LeaseLost)
		// Expired: taken over, and the old holder has lost it.
		other.Now = f.at(111 * time.Second)
		l, err = f.s.LeaseAcquire(f.ctx, other)
		noErr(f, err, "LeaseAcquire after expiry")
		if l.Holder != "replica-2" {
			f.Fatalf("taken over lease %+v", l)
		}
		_, err = f.s.LeaseRenew(f.ctx, store.LeaseRenewParams{Subject: "node_a", Name: store.LeaseChange, Holder: "replica-1", TTL: time.Minute, Now: f.at(112 * time.Second)})
		testkit.WantCode(f, err, errcode.LeaseLost)
		list, err := f.s.LeaseList(f.ctx, store.LeaseListParams{Subject: "node_a", Live: true, Now: f.at(112 * time.Second)})
		noErr(f, err, "LeaseList")
		if len(list) != 1 || list[0].Holder != "replica-2" {
			f.Fatalf("leases %+v", list)
		}
		noErr(f, f.s.LeaseRelease(f.ctx, store.LeaseReleaseParams{Subject: "node_a", Name: store.LeaseChange, Holder: "replica-1"}), "release by a non-holder")
		if list, _ := f.s.LeaseList(f.ctx, store.LeaseListParams{Subject: "node_a"}); len(list) != 1 {
			f.Fatalf("a non-holder released the lease: %+v", list)
		}
		// Handed over: granted to job:1 only because replica-2 holds it and hands it on.
		hand := store.LeaseAcquireParams{Subject: "node_a", Name: store.LeaseChange, Holder: "job:1", Purpose: "exclusive job", TTL: time.Minute, Now: f.at(112 * time.Second)}
		_, err = f.s.LeaseAcquire(f.ctx, hand)
		testkit.WantCode(f, err, errcode.LeaseHeld)
		hand.From = "replica-1"
		_, err = f.s.LeaseAcquire(f.ctx, hand)
		testkit.WantCode(f, err, errcode.LeaseHeld)
		hand.From = "replica-2"
		l, err = f.s.LeaseAcquire(f.ctx, hand)
		noErr(f, err, "LeaseAcquire handed over")
		if l.Holder != "job:1" {
			f.Fatalf("handed-over lease %+v", l)
		}
		noErr(f, f.s.LeaseRelease(f.ctx, store.LeaseReleaseParams{Subject: "node_a", Name: store.LeaseChange, Holder: "job:1"}), "LeaseRelease")
		p.Now = f.at(113 * time.Second)
		_, err = f.s.LeaseAcquire(f.ctx, p)
		noErr(f, err, "LeaseAcquire after release")
	}},
	{"Lease/NeverTwoHolders", func(f *fx) {
		// Holders on every instance race for a few leases, again and again, as time moves past each
		// expiry: at every instant each lease is granted to at most one of them.
		stores := []store.Store{f.s}
		if f.env.Peer != nil {
			stores = append(stores, f.env.Peer(f))
		}
		const holders, rounds, leases = 8, 25, 3
		var granted [rounds][leases]atomic.Int32
		var wg sync.WaitGroup
		for h := range holders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := stores[h%len(stores)]
				for r := range rounds {
					for l := range leases {
						// Each round is a minute on; a lease lasts 30 s, so every round starts with
						// every lease expired and up for grabs.
						_, err := s.LeaseAcquire(f.ctx, store.LeaseAcquireParams{Subject: fmt.Sprintf("node_%d", l), Name: store.LeaseChange,
							Holder: fmt.Sprintf("holder-%d", h), Purpose: "race", TTL: 30 * time.Second, Now: f.at(time.Duration(r) * time.Minute)})
						switch {
						case err == nil:
							granted[r][l].Add(1)
						case errcode.Has(err, errcode.LeaseHeld), errcode.Has(err, errcode.StoreBusy):
						default:
							f.Errorf("LeaseAcquire: %v", err)
						}
					}
				}
			}()
		}
		wg.Wait()
		for r := range rounds {
			for l := range leases {
				if n := granted[r][l].Load(); n > 1 {
					f.Fatalf("round %d: lease %d granted to %d holders", r, l, n)
				}
			}
		}
	}},
	{"Rollout/CreateStepsMissHaltResume", func(f *fx) {
		a, b, c := f.node("a"), f.node("b"), f.node("c")
		ro, err := f.s.RolloutCreate(f.ctx, store.RolloutCreateParams{Kind: store.RolloutJob, Word: "disk_usage", Params: json.RawMessage(`{"path":"/"}`),
			Selector: "role=web", Stages: []string{"canary 1", "100%"}, MaxParallel: 2,
			Steps: []store.RolloutStepNew{{NodeID: a.ID, NodeName: "a", Stage: 0}, {NodeID: b.ID, NodeName: "b", Stage: 1}, {NodeID: c.ID, NodeName: "c", Stage: 1}},
			By:    "operator", Now: f.at(0)})
		noErr(f, err, "RolloutCreate")
		if ro.State != store.RolloutRunning || len(ro.Steps) != 3 || ro.Steps[2].Position != 1 || ro.MaxParallel != 2 || ro.StepTimeout != 10*time.Minute {
			f.Fatalf("rollout %+v", ro)
		}
		if len(ro.Events) != 1 || ro.Events[0].Actor != "operator" || ro.Events[0].Action != "start" {
			f.Fatalf("events %+v", ro.Events)
		}
		up := store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: a.ID, FromState: store.StepPending, State: store.StepRunning, Phase: store.PhaseChange, JobID: "job_1", Now: f.at(time.Second)}
		res, err := f.s.RolloutStepUpdate(f.ctx, up)
		noErr(f, err, "RolloutStepUpdate")
		if !res.Moved || res.Step.JobID != "job_1" || !res.Step.StartedAt.Equal(f.at(time.Second)) {
			f.Fatalf("step %+v", res)
		}
		// A second replica that saw the step pending does not move it again.
		res, err = f.s.RolloutStepUpdate(f.ctx, up)
		noErr(f, err, "RolloutStepUpdate again")
		if res.Moved || res.Step.State != store.StepRunning {
			f.Fatalf("the step moved twice: %+v", res)
		}
		_, err = f.s.RolloutStepUpdate(f.ctx, store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: a.ID, FromState: store.StepRunning, FromPhase: store.PhaseChange,
			State: store.StepFailed, Phase: store.PhaseChange, Reason: "job failed: disk full", Now: f.at(2 * time.Second)})
		noErr(f, err, "RolloutStepUpdate fail")
		halted, err := f.s.RolloutMiss(f.ctx, store.RolloutMissParams{ID: ro.ID, NodeID: a.ID, NodeName: "a", Reason: "job failed: disk full", Now: f.at(2 * time.Second)})
		noErr(f, err, "RolloutMiss")
		if halted.State != store.RolloutHalted || halted.HaltNode != "a" || halted.HaltReason != "job failed: disk full" || halted.Misses != 1 {
			f.Fatalf("halted rollout %+v", halted)
		}
		_, err = f.s.RolloutSetState(f.ctx, store.RolloutSetStateParams{ID: ro.ID, From: []store.RolloutState{store.RolloutRunning}, To: store.RolloutPaused, By: "op", Action: "pause"})
		testkit.WantCode(f, err, errcode.RolloutWrongState)
		resumed, err := f.s.RolloutSetState(f.ctx, store.RolloutSetStateParams{ID: ro.ID, From: []store.RolloutState{store.RolloutPaused, store.RolloutHalted},
			To: store.RolloutRunning, By: "op", Action: "resume", Now: f.at(time.Minute)})
		noErr(f, err, "resume")
		if resumed.State != store.RolloutRunning || resumed.Misses != 0 || resumed.HaltNode != "" {
			f.Fatalf("resumed %+v", resumed)
		}
		aborted, err := f.s.RolloutSetState(f.ctx, store.RolloutSetStateParams{ID: ro.ID, From: []store.RolloutState{store.RolloutRunning, store.RolloutPaused, store.RolloutHalted},
			To: store.RolloutAborted, By: "op", Action: "abort", Now: f.at(2 * time.Minute)})
		noErr(f, err, "abort")
		if aborted.Steps[1].State != store.StepSkipped || aborted.Steps[2].State != store.StepSkipped || aborted.FinishedAt.IsZero() {
			f.Fatalf("aborted %+v", aborted)
		}
		var actions []string
		for _, e := range aborted.Events {
			actions = append(actions, e.Actor+":"+e.Action)
		}
		same(f, "audit", actions, []string{"operator:start", "plane:halt", "op:resume", "op:abort"})
		list, err := f.s.RolloutList(f.ctx, store.RolloutListParams{State: store.RolloutAborted})
		noErr(f, err, "RolloutList")
		if len(list) != 1 || list[0].ID != ro.ID {
			f.Fatalf("list %+v", list)
		}
		_, err = f.s.RolloutGet(f.ctx, store.RolloutGetParams{ID: "ro_missing"})
		testkit.WantCode(f, err, errcode.RolloutNotFound)
	}},
	{"Rollout/PatchPurposeMachinesAndStartDetail", func(f *fx) {
		a, b := f.node("patch-a"), f.node("patch-b")
		ro, err := f.s.RolloutCreate(f.ctx, store.RolloutCreateParams{Kind: store.RolloutJob, Word: "install_security_updates",
			VerifyWord: "packages_report", Selector: "all", Stages: []string{"canary 1", "100%"}, Purpose: store.PurposePatch,
			Detail: "left out: old-1 (no install_security_updates)", By: "operator", Now: f.at(0),
			Steps: []store.RolloutStepNew{{NodeID: a.ID, NodeName: a.Name, Machine: "addr:192.0.2.10"}, {NodeID: b.ID, NodeName: b.Name, Stage: 1}}})
		noErr(f, err, "RolloutCreate")
		got, err := f.s.RolloutGet(f.ctx, store.RolloutGetParams{ID: ro.ID})
		noErr(f, err, "RolloutGet")
		same(f, "purpose", got.Purpose, store.PurposePatch)
		same(f, "machines", []string{got.Steps[0].Machine, got.Steps[1].Machine}, []string{"addr:192.0.2.10", ""})
		same(f, "start detail", got.Events[0].Detail, "left out: old-1 (no install_security_updates)")
		list, err := f.s.RolloutList(f.ctx, store.RolloutListParams{})
		noErr(f, err, "RolloutList")
		same(f, "listed purpose", list[0].Purpose, store.PurposePatch)
		for _, bad := range []store.RolloutCreateParams{
			{Kind: store.RolloutJob, Word: "w", Purpose: "reboot", Steps: []store.RolloutStepNew{{NodeID: a.ID, NodeName: a.Name}}, By: "operator"},
			{Kind: store.RolloutRelease, ReleaseSequence: 1, Purpose: store.PurposePatch, Steps: []store.RolloutStepNew{{NodeID: a.ID, NodeName: a.Name}}, By: "operator"},
		} {
			_, err := f.s.RolloutCreate(f.ctx, bad)
			testkit.WantCode(f, err, errcode.StoreParamInvalid)
		}
	}},
	{"Rollout/CreateTakesTheFirstLease", func(f *fx) {
		a := f.node("lease-a")
		p := store.RolloutCreateParams{Kind: store.RolloutJob, Word: "disk_usage", Selector: "all", By: "operator", Now: f.at(0),
			Steps: []store.RolloutStepNew{{NodeID: a.ID, NodeName: a.Name}},
			Lease: store.LeaseAcquireParams{Name: "engine", Holder: "replica-1", Purpose: "advance rollout", TTL: time.Minute}}
		ro, err := f.s.RolloutCreate(f.ctx, p)
		noErr(f, err, "RolloutCreate")
		list, err := f.s.LeaseList(f.ctx, store.LeaseListParams{Subject: ro.ID})
		noErr(f, err, "LeaseList")
		if len(list) != 1 || list[0].Holder != "replica-1" || list[0].Name != "engine" || !list[0].ExpiresAt.Equal(f.at(time.Minute)) {
			f.Fatalf("the new rollout's leases %+v", list)
		}
		_, err = f.s.LeaseAcquire(f.ctx, store.LeaseAcquireParams{Subject: ro.ID, Name: "engine", Holder: "replica-2", TTL: time.Minute, Now: f.at(time.Second)})
		testkit.WantCode(f, err, errcode.LeaseHeld)
		// A lease the store would refuse refuses the rollout: nothing is made.
		before, err := f.s.RolloutList(f.ctx, store.RolloutListParams{})
		noErr(f, err, "RolloutList")
		for _, bad := range []store.LeaseAcquireParams{{Name: "engine", Holder: "replica-1"}, {Holder: "replica-1", TTL: time.Minute}} {
			p.Lease = bad
			_, err := f.s.RolloutCreate(f.ctx, p)
			testkit.WantCode(f, err, errcode.StoreParamInvalid)
		}
		after, err := f.s.RolloutList(f.ctx, store.RolloutListParams{})
		noErr(f, err, "RolloutList")
		same(f, "rollouts after refusals", len(after), len(before))
	}},
	{"Rollout/MissWhileStoppedAndJudgingList", func(f *fx) {
		a, b := f.node("a"), f.node("b")
		ro, err := f.s.RolloutCreate(f.ctx, store.RolloutCreateParams{Kind: store.RolloutJob, Word: "disk_usage", Params: json.RawMessage(`{}`),
			Selector: "all", Stages: []string{"100%"}, MaxParallel: 2, ErrorBudget: 1,
			Steps: []store.RolloutStepNew{{NodeID: a.ID, NodeName: "a"}, {NodeID: b.ID, NodeName: "b"}}, By: "operator", Now: f.at(0)})
		noErr(f, err, "RolloutCreate")
		judging := func(want int) {
			f.Helper()
			list, err := f.s.RolloutList(f.ctx, store.RolloutListParams{Judging: true})
			noErr(f, err, "RolloutList judging")
			if len(list) != want || (want == 1 && list[0].ID != ro.ID) {
				f.Fatalf("judging list %+v, want %d", list, want)
			}
		}
		_, err = f.s.RolloutStepUpdate(f.ctx, store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: a.ID, FromState: store.StepPending,
			State: store.StepRunning, Phase: store.PhaseChange, JobID: "job_1", Now: f.at(time.Second)})
		noErr(f, err, "RolloutStepUpdate")
		judging(0) // running: advanced, not listed here
		set := func(from, to store.RolloutState, action string) {
			f.Helper()
			_, err := f.s.RolloutSetState(f.ctx, store.RolloutSetStateParams{ID: ro.ID, From: []store.RolloutState{from}, To: to, By: "op", Action: action, Now: f.at(time.Minute)})
			noErr(f, err, action)
		}
		miss := func(node string, want store.RolloutState, haltNode string) {
			f.Helper()
			got, err := f.s.RolloutMiss(f.ctx, store.RolloutMissParams{ID: ro.ID, NodeID: a.ID, NodeName: node, Reason: "job failed", Now: f.at(time.Minute)})
			noErr(f, err, "RolloutMiss")
			if got.State != want || got.HaltNode != haltNode {
				f.Fatalf("after a miss on %s: %s at %q, want %s at %q", node, got.State, got.HaltNode, want, haltNode)
			}
		}
		set(store.RolloutRunning, store.RolloutPaused, "pause")
		judging(1)
		miss("a", store.RolloutPaused, "") // within the budget: stays paused
		miss("b", store.RolloutHalted, "b")
		judging(1)
		miss("a", store.RolloutHalted, "b") // halted already: the halt keeps its node
		set(store.RolloutHalted, store.RolloutAborted, "abort")
		judging(1)
		miss("a", store.RolloutAborted, "b")
		_, err = f.s.RolloutStepUpdate(f.ctx, store.RolloutStepUpdateParams{RolloutID: ro.ID, NodeID: a.ID, FromState: store.StepRunning, FromPhase: store.PhaseChange,
			State: store.StepFailed, Phase: store.PhaseChange, Reason: "job failed", Now: f.at(time.Minute)})
		noErr(f, err, "RolloutStepUpdate fail")
		judging(0)
		set(store.RolloutAborted, store.RolloutReverted, "revert")
		_, err = f.s.RolloutMiss(f.ctx, store.RolloutMissParams{ID: ro.ID, NodeID: a.ID, NodeName: "a", Reason: "late", Now: f.at(time.Minute)})
		testkit.WantCode(f, err, errcode.RolloutWrongState)
		got, err := f.s.RolloutGet(f.ctx, store.RolloutGetParams{ID: ro.ID})
		noErr(f, err, "RolloutGet")
		var actions []string
		for _, e := range got.Events {
			actions = append(actions, e.Actor+":"+e.Action)
		}
		same(f, "audit", actions, []string{"operator:start", "op:pause", "plane:miss", "plane:halt", "plane:miss", "op:abort", "plane:miss", "op:revert"})
		if got.Misses != 4 {
			f.Fatalf("misses %d", got.Misses)
		}
	}},
}
