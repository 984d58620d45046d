package httpsig

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func TestMemoryNoncesExpireAndBound(t *testing.T) {
	now := t0
	s := NewMemoryNonces(2, func() time.Time { return now })
	ctx := context.Background()
	use := func(key, nonce string, exp time.Time) (bool, error) { return s.NonceUse(ctx, key, nonce, exp) }

	if fresh, err := use("k1", "n1", t0.Add(time.Minute)); !fresh || err != nil {
		t.Fatalf("first use: %v %v", fresh, err)
	}
	if fresh, err := use("k1", "n1", t0.Add(time.Minute)); fresh || err != nil {
		t.Fatalf("second use: %v %v", fresh, err)
	}
	// Nonces are per key: another node may happen to use the same nonce.
	if fresh, err := use("k2", "n1", t0.Add(2*time.Minute)); !fresh || err != nil {
		t.Fatalf("same nonce, other key: %v %v", fresh, err)
	}
	// Full: refuse rather than forget a live nonce.
	_, err := use("k1", "n2", t0.Add(time.Minute))
	testkit.WantCode(t, err, errcode.ChannelBusy)
	if s.Len() != 2 {
		t.Fatalf("store holds %d after a refused use", s.Len())
	}
	// At its expiry a nonce is still live; after it, it is swept and room is made.
	now = t0.Add(time.Minute)
	if fresh, _ := use("k1", "n1", t0.Add(time.Minute)); fresh {
		t.Fatal("nonce forgotten at its expiry instant")
	}
	now = t0.Add(time.Minute + time.Second)
	if fresh, err := use("k1", "n2", t0.Add(3*time.Minute)); !fresh || err != nil {
		t.Fatalf("after expiry: %v %v", fresh, err)
	}
	if s.Len() != 2 { // k1/n1 swept, k2/n1 and k1/n2 live
		t.Fatalf("store holds %d, want 2", s.Len())
	}
	if fresh, _ := use("k2", "n1", t0.Add(2*time.Minute)); fresh {
		t.Fatal("live nonce swept early")
	}
}

// TestMemoryNoncesConcurrent races many goroutines on the same nonces: each is fresh exactly once.
// Run with -race.
func TestMemoryNoncesConcurrent(t *testing.T) {
	s := NewMemoryNonces(0, func() time.Time { return t0 })
	const workers, nonces = 8, 200
	var fresh atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < nonces; i++ {
				ok, err := s.NonceUse(context.Background(), "k", fmt.Sprint(i), t0.Add(time.Minute))
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					fresh.Add(1)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if fresh.Load() != nonces {
		t.Fatalf("%d fresh uses of %d nonces", fresh.Load(), nonces)
	}
}

// TestConcurrentReplayOneWins sends one signed request to the verifier from many goroutines at once:
// exactly one is accepted, the rest are refused as replays.
func TestConcurrentReplayOneWins(t *testing.T) {
	f := newFixture(t)
	r := f.signedAt(t, "POST", claimURL, []byte(`{}`), t0)
	var ok, replayed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := f.v.Verify(r.Clone(context.Background()), []byte(`{}`), t0)
			switch errcode.Code(err) {
			case "":
				ok.Add(1)
			case errcode.ChannelReplayed:
				replayed.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || replayed.Load() != 7 {
		t.Fatalf("accepted %d, replayed %d", ok.Load(), replayed.Load())
	}
}
