package provision_test

import (
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/lease"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// changeHolder is who holds the node's change lease now ("" when nobody does).
func (en *env) changeHolder(nodeID string) string {
	en.t.Helper()
	ls, err := en.st.LeaseList(en.ctx, store.LeaseListParams{Subject: nodeID, Now: en.clock.now(), Live: true})
	if err != nil {
		en.t.Fatal(err)
	}
	for _, l := range ls {
		if l.Name == store.LeaseChange {
			return l.Holder
		}
	}
	return ""
}

// TestPostJoinWorkHoldsTheNodeLease: once the provisioned node exists, its labels and DNS records are
// added under the node's change lease, so a rollout step (or an exclusive job) is refused meanwhile;
// a change already holding the node makes the provisioning wait, and it finishes after the release.
func TestPostJoinWorkHoldsTheNodeLease(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	en.pass()
	pr = en.wantState(pr.ID, store.ProvInstalling)
	res, _, err := en.agentJoin(tokenOf(t, en.cloud.lastCreate().UserData), "web-1", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}

	// The pass approves the join, then adds the DNS records: the hook looks at the node's lease then.
	var nodeID string
	stop := true
	en.dns.during = func() {
		if !stop {
			return
		}
		stop = false
		n, err := en.st.NodeGet(en.ctx, store.NodeGetParams{Name: "web-1"})
		if err != nil {
			t.Fatal(err)
		}
		nodeID = n.ID
		if got := en.changeHolder(n.ID); got != provision.NodeHolder(pr.ID) {
			t.Errorf("during the DNS step the node's change lease is held by %q, want %q", got, provision.NodeHolder(pr.ID))
		}
		// A rollout step and an exclusive job both go through the lease room: refused now.
		_, err = lease.New(en.st).Acquire(en.ctx, n.ID, "rollout:ro_x:node", "rollout step", time.Minute, en.clock.now())
		testkit.WantCode(t, err, errcode.LeaseHeld)
		_, err = lease.New(en.st).Acquire(en.ctx, n.ID, lease.JobHolder("job_x"), "exclusive job", time.Minute, en.clock.now())
		testkit.WantCode(t, err, errcode.LeaseHeld)
	}
	en.pass()
	pr = en.wantState(pr.ID, store.ProvJoined)
	if nodeID == "" || pr.NodeID != nodeID {
		t.Fatalf("the DNS step did not run on the node (%q, record %q)", nodeID, pr.NodeID)
	}
	if got := en.changeHolder(nodeID); got != "" {
		t.Fatalf("after joined the node's change lease is still held by %q", got)
	}
	if _, err := lease.New(en.st).Acquire(en.ctx, nodeID, "rollout:ro_x:node", "rollout step", time.Minute, en.clock.now()); err != nil {
		t.Fatalf("a rollout after provisioning: %v", err)
	}
	if res.Join.ProvisioningID != pr.ID {
		t.Fatalf("join: %+v", res.Join)
	}
}

// TestPostJoinWaitsForAChangeOnTheNode: a rollout that holds the node's lease when the join has been
// approved keeps provisioning from its labels and DNS until it lets go; the wait is said once on the
// timeline.
func TestPostJoinWaitsForAChangeOnTheNode(t *testing.T) {
	en := newEnv(t)
	pr := en.provision("web-1")
	en.pass()
	res, pub, err := en.agentJoin(tokenOf(t, en.cloud.lastCreate().UserData), "web-1", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	// A person approved the join before the engine's pass, and a rollout took the new node at once.
	ap, err := en.st.JoinApprove(en.ctx, store.JoinApproveParams{ID: res.Join.ID, Fingerprint: pub.Fingerprint(), Name: "web-1", By: "admin", Now: en.clock.now()})
	if err != nil {
		t.Fatal(err)
	}
	node := ap.Node.ID
	const rollout = "rollout:ro_1:step"
	if _, err := lease.New(en.st).Acquire(en.ctx, node, rollout, "rollout step", time.Hour, en.clock.now()); err != nil {
		t.Fatal(err)
	}
	en.pass()
	en.pass()
	pr = en.wantState(pr.ID, store.ProvJoining)
	waits := 0
	for _, ev := range pr.Events {
		if ev.Detail == "the join is approved; waiting for node "+node+"'s change lease, held by "+rollout {
			waits++
		}
	}
	if waits != 1 {
		t.Fatalf("the wait is on the timeline %d times: %+v", waits, pr.Events)
	}
	if n, _ := en.st.NodeGet(en.ctx, store.NodeGetParams{ID: node}); n.Labels["role"] != "" || len(en.dns.records) != 0 {
		t.Fatalf("labels or DNS while a rollout held the node: %+v %+v", n.Labels, en.dns.records)
	}
	if err := en.st.LeaseRelease(en.ctx, store.LeaseReleaseParams{Subject: node, Name: store.LeaseChange, Holder: rollout}); err != nil {
		t.Fatal(err)
	}
	en.pass()
	en.wantState(pr.ID, store.ProvJoined)
	if n, _ := en.st.NodeGet(en.ctx, store.NodeGetParams{ID: node}); n.Labels["role"] != "web" || len(en.dns.records) != 1 {
		t.Fatalf("after the rollout let go: labels %+v, DNS %+v", n.Labels, en.dns.records)
	}
	if got := en.changeHolder(node); got != "" {
		t.Fatalf("the node's change lease is still held by %q", got)
	}
}

// TestAdoptTakesTheNodeLease: adopting is refused (lease.held) while a change holds the node, and
// leaves the lease free after.
func TestAdoptTakesTheNodeLease(t *testing.T) {
	en := newEnv(t)
	en.cloud.running = true
	inst, err := en.cloud.Create(en.ctx, "test", "lin", cloudReq())
	if err != nil {
		t.Fatal(err)
	}
	pub := keys.NewNode().Public()
	j, err := en.st.JoinCreate(en.ctx, store.JoinCreateParams{Name: "old-1", Key: pub.String(), Fingerprint: pub.Fingerprint(),
		Addresses: []string{inst.IPv4[0].String()}, SourceAddress: "203.0.113.9"})
	if err != nil {
		t.Fatal(err)
	}
	ap, err := en.st.JoinApprove(en.ctx, store.JoinApproveParams{ID: j.Join.ID, Fingerprint: pub.Fingerprint(), By: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	n := ap.Node
	job := lease.JobHolder("job_running")
	if _, err := en.st.LeaseAcquire(en.ctx, store.LeaseAcquireParams{Subject: n.ID, Name: store.LeaseChange, Holder: job, Purpose: "exclusive job",
		TTL: time.Hour, Now: en.clock.now()}); err != nil {
		t.Fatal(err)
	}
	_, err = en.e.Adopt(en.ctx, "admin", n.ID, "lin", inst.ID)
	testkit.WantCode(t, err, errcode.LeaseHeld)
	if err := en.st.LeaseRelease(en.ctx, store.LeaseReleaseParams{Subject: n.ID, Name: store.LeaseChange, Holder: job}); err != nil {
		t.Fatal(err)
	}
	if _, err := en.e.Adopt(en.ctx, "admin", n.ID, "lin", inst.ID); err != nil {
		t.Fatal(err)
	}
	if got := en.changeHolder(n.ID); got != "" {
		t.Fatalf("after adopting the node's change lease is held by %q", got)
	}
}
