package httpsig

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// NonceStore records signature nonces so each is accepted once. The plane implements it with its
// store (one row per nonce, unique on keyid and nonce, deleted after expires); MemoryNonces serves
// tests and a single process.
type NonceStore interface {
	// NonceUse records nonce for keyID until expires and reports whether it was fresh (not recorded
	// before). It must be atomic: of two concurrent calls with the same keyID and nonce, one is fresh.
	NonceUse(ctx context.Context, keyID, nonce string, expires time.Time) (fresh bool, err error)
}

// DefaultMaxNonces bounds a MemoryNonces made with max <= 0: at the channel's design load of 2,000
// signed requests a second, a nonce lives 6 minutes, so about 720,000 are live at once.
const DefaultMaxNonces = 1 << 20

// MemoryNonces is an in-memory NonceStore, bounded and expiring. When it holds max live nonces it
// refuses new ones with channel.busy rather than forget a live one, which would let a replay through.
type MemoryNonces struct {
	mu   sync.Mutex
	max  int
	now  func() time.Time
	seen map[nonceKey]struct{}
	exp  expiryHeap
}

type nonceKey struct{ keyID, nonce string }

type nonceEntry struct {
	key     nonceKey
	expires time.Time
}

// NewMemoryNonces returns an empty store holding at most max live nonces (max <= 0 means
// DefaultMaxNonces). now is its clock for expiry (nil means time.Now); it must be the verifier's clock.
func NewMemoryNonces(max int, now func() time.Time) *MemoryNonces {
	if max <= 0 {
		max = DefaultMaxNonces
	}
	if now == nil {
		now = time.Now
	}
	return &MemoryNonces{max: max, now: now, seen: map[nonceKey]struct{}{}}
}

// NonceUse implements NonceStore.
func (s *MemoryNonces) NonceUse(_ context.Context, keyID, nonce string, expires time.Time) (bool, error) {
	k := nonceKey{keyID, nonce}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.now())
	if _, ok := s.seen[k]; ok {
		return false, nil
	}
	if len(s.seen) >= s.max {
		return false, errcode.New(errcode.ChannelBusy, "nonce store holds %d live nonces, its limit; retry later", s.max)
	}
	s.seen[k] = struct{}{}
	heap.Push(&s.exp, nonceEntry{key: k, expires: expires})
	return true, nil
}

// Len reports how many nonces are held, live or not yet swept.
func (s *MemoryNonces) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// expire drops every nonce whose expiry is before now. Each nonce is pushed and popped once, so the
// sweep costs O(log n) per nonce over the store's life.
func (s *MemoryNonces) expire(now time.Time) {
	for len(s.exp) > 0 && s.exp[0].expires.Before(now) {
		e := heap.Pop(&s.exp).(nonceEntry)
		delete(s.seen, e.key)
	}
}

type expiryHeap []nonceEntry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(nonceEntry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nonceEntry{} // let the strings go
	*h = old[:len(old)-1]
	return e
}

var _ NonceStore = (*MemoryNonces)(nil)
