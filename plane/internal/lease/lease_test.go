package lease_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/lease"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestChangeLease: one holder at a time; a request hands its lease to its job; a job's lease is given
// up to the next asker once the job is final, and not before.
func TestChangeLease(t *testing.T) {
	st := storetest.SQLiteOpener(t).Store
	now := time.Now()
	n := storetest.Node(t, st, "web-1", "1.0.0", now)
	leases := lease.New(st)
	ctx := t.Context()

	if _, err := leases.Acquire(ctx, n.ID, "request:a", "exclusive job", time.Hour, now); err != nil {
		t.Fatal(err)
	}
	_, err := leases.Acquire(ctx, n.ID, "replica/ro_1", "rollout ro_1", time.Hour, now)
	testkit.WantCode(t, err, errcode.LeaseHeld)

	j, err := st.JobCreate(ctx, store.JobCreateParams{NodeID: n.ID, Word: "w", Class: "look", Params: json.RawMessage(`{}`),
		CreatedBy: "alice", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Hand(ctx, n.ID, "request:a", lease.JobHolder(j.ID), "exclusive job "+j.ID, time.Hour, now); err != nil {
		t.Fatal(err)
	}
	live, err := leases.Live(ctx, n.ID, now)
	if err != nil || len(live) != 1 || live[0].Holder != "job:"+j.ID || live[0].Name != store.LeaseChange {
		t.Fatalf("live leases after the hand-over: %+v %v", live, err)
	}
	_, err = leases.Acquire(ctx, n.ID, "replica/ro_1", "rollout ro_1", time.Hour, now)
	testkit.WantCode(t, err, errcode.LeaseHeld) // the job is queued: it still holds the node

	if _, err := st.JobCancel(ctx, store.JobCancelParams{ID: j.ID, By: "alice", Now: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Acquire(ctx, n.ID, "replica/ro_1", "rollout ro_1", time.Hour, now); err != nil {
		t.Fatalf("a final job's lease is not given up: %v", err)
	}
	if err := leases.Release(ctx, n.ID, "replica/ro_1"); err != nil {
		t.Fatal(err)
	}
	if live, err := leases.Live(ctx, n.ID, now); err != nil || len(live) != 0 {
		t.Fatalf("live leases after release: %+v %v", live, err)
	}
}
