package rollouts

import (
	"context"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// JobHolder is the holder of the change lease an exclusive job takes: the job's id after "job:".
func JobHolder(jobID string) string { return "job:" + jobID }

// AcquireChange takes a node's change lease for holder. A lease an exclusive job holds is given up
// once that job is final, rather than at its expiry (which is the job's whole budget): nothing on the
// result path has to remember to release it. Refused: lease.held.
func AcquireChange(ctx context.Context, s store.Store, nodeID, holder, purpose string, ttl time.Duration, now time.Time) (store.Lease, error) {
	p := store.LeaseAcquireParams{Subject: nodeID, Name: store.LeaseChange, Holder: holder, Purpose: purpose, TTL: ttl, Now: now}
	l, err := s.LeaseAcquire(ctx, p)
	if !errcode.Has(err, errcode.LeaseHeld) {
		return l, err
	}
	other, _ := errcode.From(err, errcode.LeaseHeld).Details[errcode.DetailReason].(string)
	id, isJob := strings.CutPrefix(other, "job:")
	if !isJob {
		return l, err
	}
	j, jerr := s.JobGet(ctx, store.JobGetParams{ID: id})
	if jerr != nil || !j.State.Final() {
		return l, err
	}
	p.From = other
	return s.LeaseAcquire(ctx, p)
}
