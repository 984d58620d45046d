package wasm

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	for _, trust := range []bool{false, true} {
		var buf bytes.Buffer
		big := bytes.Repeat([]byte("m"), 100<<10) // over the single-write threshold
		for _, f := range []*frame{{Kind: kindRun, Digest: "d", Memory: 64 << 20, Output: 10, blob: []byte(`{"a":1}`)}, {Kind: kindLoad, blob: big}} {
			if err := writeFrame(&buf, f); err != nil {
				t.Fatal(err)
			}
		}
		a, err := readFrame(&buf, trust, nil)
		if err != nil || a.Kind != kindRun || a.Memory != 64<<20 || string(a.blob) != `{"a":1}` {
			t.Fatalf("trust %v: %+v %v", trust, a, err)
		}
		b, err := readFrame(&buf, trust, nil)
		if err != nil || !bytes.Equal(b.blob, big) {
			t.Fatalf("trust %v: big frame: %v", trust, err)
		}
		if _, err := readFrame(&buf, trust, nil); err == nil {
			t.Fatalf("trust %v: read past the end", trust)
		}
	}
}

// A frame cut short is an error whichever way it is read, never a shorter blob.
func TestFrameCut(t *testing.T) {
	var buf bytes.Buffer
	writeFrame(&buf, &frame{Kind: kindLoad, blob: bytes.Repeat([]byte("m"), 1000)})
	cut := buf.Bytes()[:buf.Len()-10]
	for _, trust := range []bool{false, true} {
		if _, err := readFrame(bytes.NewReader(cut), trust, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("trust %v: %v", trust, err)
		}
	}
}

// FuzzReadFrame: whatever a worker writes, the host reads a frame or an error, and never allocates past
// the caps.
func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	writeFrame(&buf, &frame{Kind: kindDone, StdoutLen: 3, blob: []byte("outerr")})
	f.Add(buf.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := readFrame(bytes.NewReader(b), false, nil)
		if err == nil && len(fr.blob) > maxFrameBlob {
			t.Fatal("blob over the cap")
		}
	})
}
