// Package datamerge rewrites a WebAssembly module so its active data segments are few and large.
//
// Go's wasip1 linker emits tens of thousands of small data segments; instantiating a module applies
// each one, which is most of the cost of a fresh instance. Adjacent segments (gaps of at most MaxGap
// zero bytes) are merged into one. Linear memory starts zeroed, so filling a gap with zeros changes
// nothing an instance can observe. Everything else in the module is copied byte for byte. A module this
// cannot merge safely (passive segments, segments not at a constant offset in memory 0, overlapping
// segments, a data-count section that code might index by) is returned unchanged.
//
// It runs at build time, before a module is hashed and signed: the host compiles exactly the bytes the
// statement pins.
package datamerge

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// MaxGap is the largest run of zeros merged into a segment rather than left as a gap.
const MaxGap = 1024

const (
	sectionData      = 11
	sectionDataCount = 12
	opI32Const       = 0x41
	opEnd            = 0x0b
)

var magic = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

// ErrNotWasm is returned for input that is not a WebAssembly 1.0 binary module.
var ErrNotWasm = errors.New("not a WebAssembly binary module")

type segment struct {
	off  uint32
	data []byte
}

// Stats says what Merge did.
type Stats struct {
	Before, After int // active data segments
}

// Merge returns module with its data segments merged, and what it did. A module it leaves alone comes
// back as is, with Before == After.
func Merge(module []byte) ([]byte, Stats, error) {
	if !bytes.HasPrefix(module, magic) {
		return nil, Stats{}, ErrNotWasm
	}
	type section struct {
		id   byte
		raw  []byte // whole section, id and size included
		body []byte
	}
	var sections []section
	dataAt := -1
	for p := module[len(magic):]; len(p) > 0; {
		id := p[0]
		size, n, err := uleb(p[1:])
		if err != nil || uint64(len(p)-1-n) < size {
			return nil, Stats{}, fmt.Errorf("section %d: %w", id, ErrNotWasm)
		}
		end := 1 + n + int(size)
		sections = append(sections, section{id: id, raw: p[:end], body: p[1+n : end]})
		switch id {
		case sectionDataCount:
			return module, Stats{}, nil // code may refer to segments by index
		case sectionData:
			dataAt = len(sections) - 1
		}
		p = p[end:]
	}
	if dataAt < 0 {
		return module, Stats{}, nil
	}
	segs, err := parseData(sections[dataAt].body)
	if err != nil {
		if errors.Is(err, errUnmergeable) {
			return module, Stats{}, nil
		}
		return nil, Stats{}, err
	}
	merged, ok := mergeSegments(segs)
	if !ok {
		return module, Stats{Before: len(segs), After: len(segs)}, nil
	}
	out := make([]byte, 0, len(module)+len(module)/8)
	out = append(out, magic...)
	for i, s := range sections {
		if i != dataAt {
			out = append(out, s.raw...)
			continue
		}
		body := encodeData(merged)
		out = append(out, sectionData)
		out = putUleb(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out, Stats{Before: len(segs), After: len(merged)}, nil
}

var errUnmergeable = errors.New("segments cannot be merged safely")

func parseData(body []byte) ([]segment, error) {
	count, n, err := uleb(body)
	if err != nil {
		return nil, fmt.Errorf("data count: %w", ErrNotWasm)
	}
	p := body[n:]
	segs := make([]segment, 0, min(count, uint64(len(p))))
	for i := uint64(0); i < count; i++ {
		flags, n, err := uleb(p)
		if err != nil {
			return nil, fmt.Errorf("data segment %d: %w", i, ErrNotWasm)
		}
		if flags != 0 {
			return nil, errUnmergeable // passive, or an explicit memory index
		}
		p = p[n:]
		if len(p) < 1 || p[0] != opI32Const {
			return nil, errUnmergeable // offset from a global
		}
		off, n, err := sleb32(p[1:])
		if err != nil {
			return nil, fmt.Errorf("data segment %d offset: %w", i, ErrNotWasm)
		}
		p = p[1+n:]
		if len(p) < 1 || p[0] != opEnd {
			return nil, errUnmergeable
		}
		p = p[1:]
		size, n, err := uleb(p)
		if err != nil || uint64(len(p)-n) < size {
			return nil, fmt.Errorf("data segment %d bytes: %w", i, ErrNotWasm)
		}
		segs = append(segs, segment{off: uint32(off), data: p[n : n+int(size)]})
		p = p[n+int(size):]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("data section has trailing bytes: %w", ErrNotWasm)
	}
	return segs, nil
}

// mergeSegments sorts and merges; it refuses overlaps, where order of application would matter.
func mergeSegments(segs []segment) ([]segment, bool) {
	sorted := slices.Clone(segs)
	slices.SortStableFunc(sorted, func(a, b segment) int {
		switch {
		case a.off < b.off:
			return -1
		case a.off > b.off:
			return 1
		}
		return 0
	})
	var out []segment
	for _, s := range sorted {
		if len(s.data) == 0 {
			continue
		}
		if n := len(out); n > 0 {
			last := &out[n-1]
			end := uint64(last.off) + uint64(len(last.data))
			if uint64(s.off) < end {
				return nil, false
			}
			if gap := uint64(s.off) - end; gap <= MaxGap {
				last.data = append(last.data, make([]byte, gap)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		out = append(out, segment{off: s.off, data: slices.Clone(s.data)})
	}
	return out, true
}

func encodeData(segs []segment) []byte {
	var b []byte
	b = putUleb(b, uint64(len(segs)))
	for _, s := range segs {
		b = append(b, 0, opI32Const)
		b = putSleb(b, int64(int32(s.off)))
		b = append(b, opEnd)
		b = putUleb(b, uint64(len(s.data)))
		b = append(b, s.data...)
	}
	return b
}

func uleb(b []byte) (uint64, int, error) {
	var x uint64
	for i := 0; i < len(b) && i < 10; i++ {
		x |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return x, i + 1, nil
		}
	}
	return 0, 0, errors.New("bad LEB128")
}

func sleb32(b []byte) (int32, int, error) {
	var x int64
	var shift uint
	for i := 0; i < len(b) && i < 5; i++ {
		x |= int64(b[i]&0x7f) << shift
		shift += 7
		if b[i] < 0x80 {
			if shift < 64 && b[i]&0x40 != 0 {
				x |= -1 << shift
			}
			return int32(x), i + 1, nil
		}
	}
	return 0, 0, errors.New("bad LEB128")
}

func putUleb(b []byte, x uint64) []byte {
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if x == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func putSleb(b []byte, x int64) []byte {
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
