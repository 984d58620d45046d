package wasm

import (
	"bytes"
	"iter"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// memoryPool hands out linear memories for one module: each an anonymous mapping reserved at the word's
// memory limit and grown in place, so growing never copies and never allocates on the Go heap. A
// memory given back is restored before it is handed out again: every byte up to the highest it ever
// exposed is made what a fresh instance's memory holds before its first instruction (the module's
// data segments over zeros, once the pool has learnt them; zeros until then), so nothing of one
// invocation is visible to the next.
type memoryPool struct {
	limit uint64 // bytes; a grow past it is refused and remembered

	// image is what the module's active data segments make of zeroed memory, learnt from the first
	// instantiation that applies them (HoldsData). Set once.
	image atomic.Pointer[dataImage]

	mu    sync.Mutex
	clean []*linearMemory // restored, ready
	dirty []*linearMemory // given back, not restored yet
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

// get returns a clean memory: a pooled one, one given back and restored now (cheaper than faulting in
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
		m.restore()
		return m, nil
	}
	p.mu.Unlock()
	buf, err := unix.Mmap(-1, 0, int(p.limit), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	return &linearMemory{pool: p, buf: buf}, nil
}

// put takes m back: it is kept dirty and restored in the background, or unmapped when the pool is full
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

// cleanOne restores one dirty memory, if a caller has not taken it to restore itself.
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
	m.restore()
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
	// holds is true while the memory holds the pool's image and no instantiation has been told so.
	holds bool
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

// restore makes the memory what a fresh instance's memory holds before its first instruction: the
// pool's image, zeros beyond it, and zeros everywhere before the pool has one. It compares before it
// writes: a run dirties a few hundred KiB of the megabytes it exposes, so most of the memory is only
// read, and the instantiation it is handed to skips the data segments' copy. Every byte up to the
// highest the last instance exposed (and the image's end) is compared, so nothing it wrote survives,
// whatever it wrote where.
func (m *linearMemory) restore() {
	var chunks [][]byte
	img := m.pool.image.Load()
	if img != nil {
		chunks = img.chunks
	}
	end := max(m.high, uint64(len(chunks))*restoreChunk)
	for i := uint64(0); i*restoreChunk < end; i++ {
		got := m.buf[i*restoreChunk : min((i+1)*restoreChunk, end)]
		want := zeroChunk[:len(got)]
		if i < uint64(len(chunks)) && chunks[i] != nil {
			want = chunks[i]
		}
		if !bytes.Equal(got, want) {
			copy(got, want)
		}
	}
	m.high, m.freed, m.holds = 0, false, img != nil
}

// restoreChunk is the unit restore compares and rewrites: a page, the grain a Go word's runtime
// dirties memory in.
const restoreChunk = 4096

var zeroChunk [restoreChunk]byte

// HoldsData is asked by the instantiation the memory was handed to (the patched wazero's dataHolder,
// third_party/wazero): does it already hold these active data segments over zeros? True only when it
// was restored to the pool's image and the image was made by exactly these segments; then the
// instantiation skips their copies. The first instantiation of a pool's memories teaches the pool its
// image. A memory holding an image the segments do not match is zeroed, which is what an
// instantiation told false expects beneath its copies.
func (m *linearMemory) HoldsData(segments iter.Seq2[uint64, []byte]) bool {
	img := m.pool.image.Load()
	if m.holds {
		m.holds = false
		if img.matches(segments) {
			return true
		}
		clear(m.buf[:len(img.chunks)*restoreChunk])
		return false
	}
	if img == nil {
		m.pool.image.CompareAndSwap(nil, learnImage(segments, m.high))
	}
	return false
}

// dataImage is a module's active data segments applied, in order, to zeroed memory.
type dataImage struct {
	segments []dataSegment
	// chunks is the image by restoreChunk from offset 0 to the chunk holding its last byte, the rest
	// of that chunk zeros; nil for a chunk of zeros (most of a Go module's: its bss and heap). A chunk
	// one segment covers whole is that segment's own bytes, so the image holds little memory of its
	// own.
	chunks [][]byte
}

type dataSegment struct {
	offset uint64
	init   []byte // the compiled module's own bytes, never written
}

// learnImage builds the image segments make, or nil if a segment lies beyond limit, the memory's size
// (the instantiation then fails on it).
func learnImage(segments iter.Seq2[uint64, []byte], limit uint64) *dataImage {
	img := &dataImage{}
	end := uint64(0)
	for off, init := range segments {
		if off > limit || uint64(len(init)) > limit-off {
			return nil
		}
		img.segments = append(img.segments, dataSegment{offset: off, init: init})
		end = max(end, off+uint64(len(init)))
	}
	img.chunks = make([][]byte, (end+restoreChunk-1)/restoreChunk)
	own := make([]bool, len(img.chunks)) // the chunk is the image's own copy, not a segment's bytes
	for _, s := range img.segments {
		segEnd := s.offset + uint64(len(s.init))
		for i := s.offset / restoreChunk; i*restoreChunk < segEnd; i++ {
			lo, hi := i*restoreChunk, (i+1)*restoreChunk
			if s.offset <= lo && segEnd >= hi { // whatever came before, this segment makes the chunk
				img.chunks[i], own[i] = s.init[lo-s.offset:hi-s.offset], false
				continue
			}
			if !own[i] { // first written in part, or over another segment's bytes: copy before writing
				c := make([]byte, restoreChunk)
				copy(c, img.chunks[i])
				img.chunks[i], own[i] = c, true
			}
			from, to := max(s.offset, lo), min(segEnd, hi)
			copy(img.chunks[i][from-lo:to-lo], s.init[from-s.offset:to-s.offset])
		}
	}
	for i, c := range img.chunks {
		if c != nil && bytes.Equal(c, zeroChunk[:]) {
			img.chunks[i] = nil
		}
	}
	return img
}

// matches reports whether segments are the ones the image was made of: the same offsets and the same
// bytes, in order.
func (img *dataImage) matches(segments iter.Seq2[uint64, []byte]) bool {
	i := 0
	for off, init := range segments {
		if i == len(img.segments) {
			return false
		}
		s := img.segments[i]
		if s.offset != off || len(s.init) != len(init) ||
			unsafe.SliceData(s.init) != unsafe.SliceData(init) && !bytes.Equal(s.init, init) {
			return false
		}
		i++
	}
	return i == len(img.segments)
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
