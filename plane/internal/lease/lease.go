// Package lease grants a node's change lease: the one lock every change to a node takes (a rollout's
// step, an exclusive job, an adoption, provisioning's post-join work), so that two changes never run on
// one machine at once.
package lease

import (
	"context"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what the lease room reads and writes: the leases, and a job's state (an exclusive job's
// lease is given up once its job is final).
type Store interface {
	LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, error)
	LeaseRelease(ctx context.Context, p store.LeaseReleaseParams) error
	LeaseList(ctx context.Context, p store.LeaseListParams) ([]store.Lease, error)
	JobGet(ctx context.Context, p store.JobGetParams) (store.Job, error)
}

// Room grants and gives up nodes' change leases.
type Room struct{ store Store }

// New makes the room over s.
func New(s Store) *Room { return &Room{store: s} }

// JobHolder is the holder of the change lease an exclusive job takes: the job's id after "job:".
func JobHolder(jobID string) string { return "job:" + jobID }

// Acquire takes a node's change lease for holder, or renews it if holder has it. A lease an exclusive
// job holds is given up once that job is final, rather than at its expiry (which is the job's whole
// budget): nothing on the result path has to remember to release it. Refused: lease.held.
func (r *Room) Acquire(ctx context.Context, nodeID, holder, purpose string, ttl time.Duration, now time.Time) (store.Lease, error) {
	p := store.LeaseAcquireParams{Subject: nodeID, Name: store.LeaseChange, Holder: holder, Purpose: purpose, TTL: ttl, Now: now}
	l, err := r.store.LeaseAcquire(ctx, p)
	if !errcode.Has(err, errcode.LeaseHeld) {
		return l, err
	}
	other, _ := errcode.From(err, errcode.LeaseHeld).Details[errcode.DetailReason].(string)
	id, isJob := strings.CutPrefix(other, "job:")
	if !isJob {
		return l, err
	}
	j, jerr := r.store.JobGet(ctx, store.JobGetParams{ID: id})
	if jerr != nil || !j.State.Final() {
		return l, err
	}
	p.From = other
	return r.store.LeaseAcquire(ctx, p)
}

// Hand gives the node's change lease from its holder to another (an exclusive job takes over the lease
// its request took before the job had an id). Refused: lease.held (from no longer holds it).
func (r *Room) Hand(ctx context.Context, nodeID, from, to, purpose string, ttl time.Duration, now time.Time) (store.Lease, error) {
	return r.store.LeaseAcquire(ctx, store.LeaseAcquireParams{Subject: nodeID, Name: store.LeaseChange, Holder: to,
		Purpose: purpose, TTL: ttl, Now: now, From: from})
}

// Release gives the node's change lease up; releasing one holder does not hold does nothing.
func (r *Room) Release(ctx context.Context, nodeID, holder string) error {
	return r.store.LeaseRelease(ctx, store.LeaseReleaseParams{Subject: nodeID, Name: store.LeaseChange, Holder: holder})
}

// Live lists the leases on a node that have not expired at now.
func (r *Room) Live(ctx context.Context, nodeID string, now time.Time) ([]store.Lease, error) {
	return r.store.LeaseList(ctx, store.LeaseListParams{Subject: nodeID, Live: true, Now: now})
}
