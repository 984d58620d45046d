package sqldb

import "sync"

// Hub fans wake-ups out to the waiters of one process, per node. PostgreSQL feeds it from its one
// LISTEN connection; SQLite feeds it directly after a job is queued. A wake-up never blocks: each
// waiter's channel holds one value, and further ones coalesce into it.
type Hub struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	closed  bool
	// first runs once, on the first Subscribe: PostgreSQL starts its listener there, so that a CLI
	// that opens the store to mint a token never holds a listening connection.
	first func()
	once  sync.Once
}

// NewHub makes a hub; first (nil for none) runs on the first Subscribe.
func NewHub(first func()) *Hub {
	return &Hub{waiters: map[string]map[chan struct{}]struct{}{}, first: first}
}

// Subscribe implements Notifier.
func (h *Hub) Subscribe(nodeID string) (<-chan struct{}, func()) {
	if h.first != nil {
		h.once.Do(h.first)
	}
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.closed {
		// A closed store wakes at once, so the caller's next claim reports store.closed.
		ch <- struct{}{}
		h.mu.Unlock()
		return ch, func() {}
	}
	set := h.waiters[nodeID]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		h.waiters[nodeID] = set
	}
	set[ch] = struct{}{}
	h.mu.Unlock()
	var stop sync.Once
	return ch, func() {
		stop.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if set := h.waiters[nodeID]; set != nil {
				delete(set, ch)
				if len(set) == 0 {
					delete(h.waiters, nodeID)
				}
			}
		})
	}
}

// Wake signals every waiter of nodeID.
func (h *Hub) Wake(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.waiters[nodeID] {
		signal(ch)
	}
}

// WakeAll signals every waiter, when wake-ups may have been missed.
func (h *Hub) WakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.waiters {
		for ch := range set {
			signal(ch)
		}
	}
}

// Close wakes every waiter one last time; later subscribers are woken at once.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, set := range h.waiters {
		for ch := range set {
			signal(ch)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// WaiterCount is the number of subscriptions held, for tests and metrics.
func (h *Hub) WaiterCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, set := range h.waiters {
		n += len(set)
	}
	return n
}

var _ Notifier = (*Hub)(nil)
