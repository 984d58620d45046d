package sqlstore

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

// Ids are a prefix naming the kind ("job_", "node_", ...) and 26 characters of lowercase Crockford
// base32: 48 bits of milliseconds since the epoch, then 80 random bits, as in ULID. They sort by
// creation across replicas to the precision of their clocks; within one process an id made in the same
// millisecond as the previous one is that one plus one, so a process's ids never sort out of order.

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

type idSource struct {
	mu     sync.Mutex
	lastMS uint64
	hi     uint16 // top 16 of the 80 random bits
	lo     uint64 // low 64 of the 80 random bits
}

// next returns a fresh id with prefix. Each store holds its own source.
func (ids *idSource) next(prefix string, now time.Time) string {
	ms := uint64(now.UnixMilli())
	ids.mu.Lock()
	if ms <= ids.lastMS {
		// Same (or an earlier, after a clock step) millisecond: count up from the last id so the
		// order holds. Overflowing 80 bits within one millisecond cannot happen in practice.
		ms = ids.lastMS
		ids.lo++
		if ids.lo == 0 {
			ids.hi++
		}
	} else {
		var b [10]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		ids.lastMS = ms
		ids.hi = binary.BigEndian.Uint16(b[:2])
		ids.lo = binary.BigEndian.Uint64(b[2:])
	}
	hi, lo := ids.hi, ids.lo
	ids.mu.Unlock()

	// 128 bits: 48 of time, 80 of randomness, written 5 bits at a time from the top (26 digits, the
	// first carrying only 3 bits).
	var raw [16]byte
	raw[0] = byte(ms >> 40)
	raw[1] = byte(ms >> 32)
	raw[2] = byte(ms >> 24)
	raw[3] = byte(ms >> 16)
	raw[4] = byte(ms >> 8)
	raw[5] = byte(ms)
	binary.BigEndian.PutUint16(raw[6:8], hi)
	binary.BigEndian.PutUint64(raw[8:16], lo)

	out := make([]byte, len(prefix)+26)
	copy(out, prefix)
	d := out[len(prefix):]
	for i := 25; i >= 0; i-- {
		bit := (25 - i) * 5 // position of this digit's lowest bit, from the bottom
		d[i] = crockford[bits5(raw, bit)]
	}
	return string(out)
}

// bits5 returns the five bits of the big-endian 128-bit number raw starting at bit pos from the bottom
// (fewer at the top).
func bits5(raw [16]byte, pos int) byte {
	var v byte
	for k := 0; k < 5 && pos+k < 128; k++ {
		p := pos + k
		if raw[15-p/8]>>(p%8)&1 == 1 {
			v |= 1 << k
		}
	}
	return v
}
