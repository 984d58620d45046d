package wasm

import (
	"bytes"
	"iter"
	"testing"
)

func segments(segs ...dataSegment) iter.Seq2[uint64, []byte] {
	return func(yield func(uint64, []byte) bool) {
		for _, s := range segs {
			if !yield(s.offset, s.init) {
				return
			}
		}
	}
}

// TestRestoreMakesTheImage follows one memory through the pool: the first instantiation is told
// nothing is held and teaches the pool its image; a run scribbles inside the image, beyond it and
// past the memory's first size; restored, the memory is the image over zeros, byte for byte, and the
// next instantiation with the same segments is told they are held, once.
func TestRestoreMakesTheImage(t *testing.T) {
	p := newMemoryPool(1 << 20)
	defer p.close()
	a := dataSegment{offset: 100, init: bytes.Repeat([]byte{1}, 5000)}
	b := dataSegment{offset: 3*restoreChunk + 7, init: []byte("data")}
	// c covers chunks 5 and 6 whole (the image shares its bytes) and parts of 4 and 7; d, applied
	// after it, overwrites part of c in chunk 6.
	c := dataSegment{offset: 5*restoreChunk - 10, init: bytes.Repeat([]byte{2}, 2*restoreChunk+20)}
	d := dataSegment{offset: 6*restoreChunk + 5, init: []byte("over")}
	segs := segments(a, b, c, d)

	m, err := p.get()
	if err != nil {
		t.Fatal(err)
	}
	m.track = &memoryTrack{}
	buf := m.Reallocate(64 << 10)
	if m.HoldsData(segs) {
		t.Fatal("a new mapping holds no data")
	}
	for _, s := range []dataSegment{a, b, c, d} { // what wazero does when told false
		copy(buf[s.offset:], s.init)
	}
	want := append([]byte(nil), buf...)

	buf = m.Reallocate(256 << 10) // the run grows its memory and writes everywhere
	for _, off := range []int{0, 150, 4096, 3*restoreChunk + 8, 5*restoreChunk + 1, 6*restoreChunk + 6, 100 << 10, 256<<10 - 1} {
		buf[off] ^= 0xa5
	}
	m.Free()

	m, err = p.get() // the only memory, restored now
	if err != nil {
		t.Fatal(err)
	}
	m.track = &memoryTrack{}
	buf = m.Reallocate(256 << 10)
	if !bytes.Equal(buf[:64<<10], want) || !bytes.Equal(buf[64<<10:], make([]byte, 192<<10)) {
		t.Fatal("restored memory is not the image over zeros")
	}
	if !bytes.Equal(c.init, bytes.Repeat([]byte{2}, 2*restoreChunk+20)) {
		t.Fatal("restoring wrote into the module's own segment bytes")
	}
	if !m.HoldsData(segs) {
		t.Fatal("a memory restored to these segments' image does not hold them")
	}
	if m.HoldsData(segs) {
		t.Fatal("a memory told one instantiation it holds the data tells a second")
	}
}

// TestHoldsDataRefusesOtherSegments: a restored memory asked about segments its image was not made
// of says no and zeroes the image, so the instantiation's copies land on zeros.
func TestHoldsDataRefusesOtherSegments(t *testing.T) {
	p := newMemoryPool(1 << 20)
	defer p.close()
	a := dataSegment{offset: 10, init: []byte("original")}
	m, _ := p.get()
	m.track = &memoryTrack{}
	buf := m.Reallocate(64 << 10)
	m.HoldsData(segments(a))
	copy(buf[a.offset:], a.init)
	m.Free()

	m, _ = p.get()
	m.track = &memoryTrack{}
	buf = m.Reallocate(64 << 10)
	for _, other := range []iter.Seq2[uint64, []byte]{
		segments(dataSegment{offset: 11, init: a.init}),
		segments(dataSegment{offset: 10, init: []byte("changed!")}),
		segments(a, a),
		segments(),
	} {
		m.holds = true
		if m.HoldsData(other) {
			t.Fatal("held data for segments the image was not made of")
		}
		if !bytes.Equal(buf, make([]byte, 64<<10)) {
			t.Fatal("memory not zeroed after refusing other segments")
		}
		copy(buf[a.offset:], a.init)
	}
}
