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

	mu    sync.Mutex
	clean []*linearMemory // zeroed, ready
	dirty []*linearMemory // given back, not zeroed yet
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

// get returns a clean memory: a pooled one, one given back and zeroed now (cheaper than faulting in
// fresh pages, which costs ~16 µs a page on this kind of VM), or a new mapping.
func (p *memoryPool) get() (*linearMemory, error) {
	p.mu.Lock()
	if n := len(p.clean); n > 0 {
		m := p.clean[n-1]
		p.clean = p.clean[:n-1]
		p.mu.Unlock()
		return m, nil
	}
	if n := len(p.dirty); n > 0 {
		m := p.dirty[n-1]
		p.dirty = p.dirty[:n-1]
		p.mu.Unlock()
		m.zero()
		return m, nil
	}
	p.mu.Unlock()
	buf, err := unix.Mmap(-1, 0, int(p.limit), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	return &linearMemory{pool: p, buf: buf}, nil
}

// put takes m back: it is kept dirty and zeroed in the background, or unmapped when the pool is full
// or m grew large.
func (p *memoryPool) put(m *linearMemory) {
	if m.high > keepBelow {
		m.unmap()
		return
	}
	m.track = nil
	p.mu.Lock()
	if len(p.clean)+len(p.dirty) >= keepPooled {
		p.mu.Unlock()
		m.unmap()
		return
	}
	p.dirty = append(p.dirty, m)
	p.mu.Unlock()
	go p.cleanOne()
}

// cleanOne zeroes one dirty memory, if a caller has not taken it to zero itself.
func (p *memoryPool) cleanOne() {
	p.mu.Lock()
	n := len(p.dirty)
	if n == 0 {
		p.mu.Unlock()
		return
	}
	m := p.dirty[n-1]
	p.dirty = p.dirty[:n-1]
	p.mu.Unlock()
	m.zero()
	p.mu.Lock()
	p.clean = append(p.clean, m)
	p.mu.Unlock()
}

// close unmaps the pooled memories. Memories in use are unmapped when they are given back.
func (p *memoryPool) close() {
	p.mu.Lock()
	all := append(p.clean, p.dirty...)
	p.clean, p.dirty = nil, nil
	p.mu.Unlock()
	for _, m := range all {
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

// Free implements experimental.LinearMemory. The memory goes back to the pool dirty; it is zeroed before
// anyone gets it again.
func (m *linearMemory) Free() {
	if m.freed {
		return
	}
	m.freed = true
	m.pool.put(m)
}

// zero clears everything the last instance could have written.
func (m *linearMemory) zero() {
	clear(m.buf[:m.high])
	m.high, m.freed = 0, false
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
