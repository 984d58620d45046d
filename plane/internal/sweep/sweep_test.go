package sweep_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/sweep"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
	"github.com/lexicon-fleet/lexicon/registry/keys"
)

// expiring records, at t0, a nonce and a pending join that both expire within the hour.
func expiring(t *testing.T, s store.Store, t0 time.Time) {
	t.Helper()
	ctx := t.Context()
	if fresh, err := s.NonceUse(ctx, store.NonceUseParams{KeyID: "k", Nonce: "n1", ExpiresAt: t0.Add(time.Minute), Now: t0}); err != nil || !fresh {
		t.Fatalf("nonce: %v %v", fresh, err)
	}
	pub := keys.NewNode().Public()
	if _, err := s.JoinCreate(ctx, store.JoinCreateParams{Name: "web-1", Key: pub.String(), Fingerprint: pub.Fingerprint(),
		SourceAddress: "192.0.2.1", Now: t0}); err != nil {
		t.Fatal(err)
	}
}

// left reports what a sweep at now would still find: nonces to purge and joins to mark expired.
func left(t *testing.T, s store.Store, now time.Time) (nonces, joins int64) {
	t.Helper()
	n, err := s.NoncePurge(t.Context(), store.NoncePurgeParams{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.JoinExpire(t.Context(), store.JoinExpireParams{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return n, j
}

func TestSweepPurgesNoncesAndExpiresJoins(t *testing.T) {
	t0 := time.Now().UTC().Truncate(time.Second)
	later := t0.Add(2 * time.Hour)
	sw := func(s store.Store) {
		sweep.New(sweep.Config{Store: s, Now: func() time.Time { return later }}).Sweep(t.Context())
	}

	// Without a sweep, both are there to be swept.
	s := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	expiring(t, s, t0)
	if n, j := left(t, s, later); n != 1 || j != 1 {
		t.Fatalf("unswept: %d nonces, %d joins; want 1 and 1", n, j)
	}
	// After one, nothing is.
	s = storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	expiring(t, s, t0)
	sw(s)
	if n, j := left(t, s, later); n != 0 || j != 0 {
		t.Fatalf("after a sweep %d nonces and %d joins remain", n, j)
	}
	sw(s) // again: nothing to do, nothing fails
}

func TestSweeperRunsOnItsTick(t *testing.T) {
	t0 := time.Now().UTC().Truncate(time.Second)
	later := t0.Add(2 * time.Hour)
	s := storetest.Open(t, filepath.Join(t.TempDir(), "plane.db"))
	expiring(t, s, t0)
	sw := sweep.New(sweep.Config{Store: s, Now: func() time.Time { return later }})
	ticks, stopped := make(chan time.Time), make(chan struct{})
	sw.NewTicker = func(d time.Duration) (<-chan time.Time, func()) {
		if d != sweep.DefaultEvery {
			t.Errorf("ticker of %s, want %s", d, sweep.DefaultEvery)
		}
		return ticks, func() { close(stopped) }
	}
	if err := sw.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The loop takes the second tick only after the first tick's pass returned.
	ticks <- later
	ticks <- later
	if n, j := left(t, s, later); n != 0 || j != 0 {
		t.Fatalf("after a tick %d nonces and %d joins remain", n, j)
	}
	if err := sw.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-stopped
}
