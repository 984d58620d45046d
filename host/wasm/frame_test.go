package wasm

import (
	"bytes"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	big := bytes.Repeat([]byte("m"), 100<<10) // over the single-write threshold
	for _, f := range []*frame{{Kind: kindRun, Digest: "d", Memory: 64 << 20, Output: 10, blob: []byte(`{"a":1}`)}, {Kind: kindLoad, blob: big}} {
		if err := writeFrame(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	a, err := readFrame(&buf)
	if err != nil || a.Kind != kindRun || a.Memory != 64<<20 || string(a.blob) != `{"a":1}` {
		t.Fatalf("%+v %v", a, err)
	}
	b, err := readFrame(&buf)
	if err != nil || !bytes.Equal(b.blob, big) {
		t.Fatalf("big frame: %v", err)
	}
	if _, err := readFrame(&buf); err == nil {
		t.Fatal("read past the end")
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
		fr, err := readFrame(bytes.NewReader(b))
		if err == nil && len(fr.blob) > maxFrameBlob {
			t.Fatal("blob over the cap")
		}
	})
}
