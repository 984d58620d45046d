package wasm

import (
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// memoryPool hands out linear memories for one word: each an anonymous mapping reserved at the word's
// memory limit and grown in place, so growing never copies and never allocates on the Go heap. A
// memory given back is zeroed up to the highest byte it ever exposed before it is handed out again, so
// nothing of one invocation is visible to the next.
type memoryPool struct {
	limit uint64 // bytes; a grow past it is refused and remembered

	mu   sync.Mutex
	free []*linearMemory
}

// keepPooled is how many clean memories a pool keeps; keepBelow is the high-water mark above which a
// memory is unmapped rather than kept, so one hungry call does not pin its pages for good.
const (
	keepPooled = 4
	keepBelow  = 64 << 20
)

func newMemoryPool(limit uint64) *memoryPool { return &memoryPool{limit: limit} }

// allocator returns the experimental.MemoryAllocator for one instantiation; the memory it hands out
// reports to track, so the caller learns whether the word hit its limit.
func (p *memoryPool) allocator(track *memoryTrack) experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(_, _ uint64) experimental.LinearMemory {
		m, err := p.get()
		if err != nil {
			track.failed.Store(true)
			return refusedMemory{}
		}
		m.track = track
		return m
	})
}

// memoryTrack is what an invocation learns about its memory.
type memoryTrack struct {
	exceeded atomic.Bool // a grow past the limit was refused
	failed   atomic.Bool // the host could not reserve the memory at all
	high     atomic.Uint64
}

func (p *memoryPool) get() (*linearMemory, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		m := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return m, nil
	}
	p.mu.Unlock()
	buf, err := unix.Mmap(-1, 0, int(p.limit), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	return &linearMemory{pool: p, buf: buf}, nil
}

// put zeroes m and keeps it, or unmaps it when the pool is full or m grew large.
func (p *memoryPool) put(m *linearMemory) {
	if m.high > keepBelow {
		m.unmap()
		return
	}
	clear(m.buf[:m.high])
	m.high, m.track, m.freed = 0, nil, false
	p.mu.Lock()
	if len(p.free) < keepPooled {
		p.free = append(p.free, m)
		m = nil
	}
	p.mu.Unlock()
	if m != nil {
		m.unmap()
	}
}

// close unmaps the pooled memories. Memories in use are unmapped when they are given back.
func (p *memoryPool) close() {
	p.mu.Lock()
	free := p.free
	p.free = nil
	p.mu.Unlock()
	for _, m := range free {
		m.unmap()
	}
}

// linearMemory is one reserved mapping.
type linearMemory struct {
	pool  *memoryPool
	buf   []byte
	high  uint64
	track *memoryTrack
	freed bool
}

// Reallocate implements experimental.LinearMemory. Returning nil makes memory.grow answer -1, which a
// Go word turns into "out of memory" and an exit: a clean failure, never a host crash.
func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		m.track.exceeded.Store(true)
		return nil
	}
	if size > m.high {
		m.high = size
		m.track.high.Store(size)
	}
	return m.buf[:size:size]
}

// Free implements experimental.LinearMemory. The zeroing runs off the caller's path: the memory goes
// back into the pool only once it is clean.
func (m *linearMemory) Free() {
	if m.freed {
		return
	}
	m.freed = true
	go m.pool.put(m)
}

func (m *linearMemory) unmap() {
	if m.buf != nil {
		_ = unix.Munmap(m.buf)
		m.buf = nil
	}
}

// refusedMemory is handed out when no mapping could be made; every allocation through it fails.
type refusedMemory struct{}

func (refusedMemory) Reallocate(uint64) []byte { return nil }
func (refusedMemory) Free()                    {}

var (
	_ experimental.LinearMemory = (*linearMemory)(nil)
	_ experimental.LinearMemory = refusedMemory{}
)
