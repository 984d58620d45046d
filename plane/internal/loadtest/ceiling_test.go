package loadtest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
)

// storeCeiling is what the store itself sustains of the plane's steady-state round trip, with the
// plane left out: the same agents, each running the statements and commits the plane runs for one
// job result that carries the next claim (the node's key looked up; the signature's nonce recorded,
// the job finished and the next one claimed in one transaction), straight against the store, in
// this process, with no HTTP, TLS, signatures or JSON. It is the figure a plane on SQLite is judged
// against (SQLite has no pgbench), and on PostgreSQL it tells the plane's own overhead apart from the
// commit pattern's. It returns round trips per second.
func storeCeiling(b *testing.B, st store.Store, fleet []*simAgent, jobs int) float64 {
	ctx := context.Background()
	queue(b, st, fleet, jobs)
	var done atomic.Int64
	var failed atomic.Pointer[error]
	start := time.Now()
	var wg sync.WaitGroup
	for _, a := range fleet {
		wg.Go(func() {
			fp := a.key.Public().Fingerprint()
			job, err := st.JobClaim(ctx, store.JobClaimParams{NodeID: a.id, Now: time.Now()})
			for err == nil && job != nil {
				if _, err = st.NodeGetByKey(ctx, store.NodeGetByKeyParams{Fingerprint: fp}); err != nil {
					break
				}
				var res store.JobFinishClaimResult
				res, err = st.JobFinishClaim(ctx, store.JobFinishParams{ID: job.ID, NodeID: a.id, Outcome: store.JobCompleted, Output: json.RawMessage(`{}`), Now: time.Now(),
					Nonce: &store.NonceUseParams{KeyID: fp, Nonce: nonce(), ExpiresAt: time.Now().Add(5 * time.Minute)}})
				if err != nil {
					break
				}
				if res.Replayed {
					err = fmt.Errorf("a fresh nonce refused as a replay")
					break
				}
				done.Add(1)
				job = res.Next
			}
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := failed.Load(); err != nil {
		b.Fatalf("store ceiling: %v", *err)
	}
	if n := done.Load(); n != int64(len(fleet)*jobs) {
		b.Fatalf("store ceiling: %d round trips, want %d", n, len(fleet)*jobs)
	}
	return float64(done.Load()) / elapsed.Seconds()
}

// queue queues jobs for each agent of fleet, from a few goroutines at once (one after another, 20,000
// commits would take longer than the window they are queued for).
func queue(b *testing.B, st store.Store, fleet []*simAgent, jobs int) {
	ctx := context.Background()
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(fleet); i += 8 {
				for range jobs {
					if _, err := st.JobCreate(ctx, store.JobCreateParams{NodeID: fleet[i].id, Word: noop.Name, WordDigest: noop.Digest, Class: "look", Params: json.RawMessage(`{}`), CreatedBy: "load"}); err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
}

// nonce is a fresh signature nonce, as an agent makes one for each request.
func nonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
