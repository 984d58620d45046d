package datamerge_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/lexicon-fleet/lexicon/registry/cmd/lexicon-release/internal/datamerge"
)

// module builds a minimal module: one memory of pages pages and the given data section body.
func module(pages byte, data []byte) []byte {
	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	m = append(m, 5, 3, 1, 0, pages)               // memory section: one memory, min pages
	m = append(m, 7, 7, 1, 3, 'm', 'e', 'm', 2, 0) // export "mem" memory 0
	m = append(m, 11, byte(len(data)))
	return append(m, data...)
}

// seg encodes an active segment at off (below 128) with bytes b.
func seg(off byte, b ...byte) []byte {
	return append([]byte{0, 0x41, off, 0x0b, byte(len(b))}, b...)
}

// memoryAfterInstantiation returns the first n bytes of the module's memory once its data is applied.
func memoryAfterInstantiation(t *testing.T, wasm []byte, n uint32) []byte {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	mod, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	b, ok := mod.ExportedMemory("mem").Read(0, n)
	if !ok {
		t.Fatal("memory too small")
	}
	return bytes.Clone(b)
}

func TestMergeKeepsMemory(t *testing.T) {
	data := append([]byte{3}, seg(40, 7, 8)...)
	data = append(data, seg(0, 1, 2, 3)...)
	data = append(data, seg(10, 4)...)
	in := module(1, data)
	out, st, err := datamerge.Merge(in)
	if err != nil {
		t.Fatal(err)
	}
	if st.Before != 3 || st.After != 1 {
		t.Fatalf("stats %+v", st)
	}
	if want, got := memoryAfterInstantiation(t, in, 64), memoryAfterInstantiation(t, out, 64); !bytes.Equal(want, got) {
		t.Fatalf("memory differs:\n%v\n%v", want, got)
	}
}

func TestMergeLeavesUnsafeModulesAlone(t *testing.T) {
	overlap := append([]byte{2}, seg(0, 1, 2, 3)...)
	overlap = append(overlap, seg(1, 9)...)
	passive := []byte{1, 1, 2, 5, 6}
	global := []byte{1, 0, 0x23, 0, 0x0b, 1, 9}
	for name, data := range map[string][]byte{"overlap": overlap, "passive": passive, "global offset": global} {
		t.Run(name, func(t *testing.T) {
			in := module(1, data)
			out, _, err := datamerge.Merge(in)
			if err != nil || !bytes.Equal(in, out) {
				t.Fatalf("changed: %v", err)
			}
		})
	}
	if _, _, err := datamerge.Merge([]byte("#!/bin/sh")); err != datamerge.ErrNotWasm {
		t.Fatalf("not wasm: %v", err)
	}
}

// TestMergeRealWord builds a real Go word (the host's reference word), merges it, and compares the two
// modules' whole memory once their data is applied.
func TestMergeRealWord(t *testing.T) {
	raw := filepath.Join(t.TempDir(), "ref.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", raw, "github.com/lexicon-fleet/lexicon/host/wasm/testdata/ref")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	in, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, st, err := datamerge.Merge(in)
	if err != nil || st.Before < 1000 || st.After > 4 {
		t.Fatalf("merge: %+v %v", st, err)
	}
	ctx := context.Background()
	snapshot := func(wasm []byte) []byte {
		r := wazero.NewRuntime(ctx)
		defer r.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, r)
		cm, err := r.CompileModule(ctx, wasm)
		if err != nil {
			t.Fatal(err)
		}
		mod, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions())
		if err != nil {
			t.Fatal(err)
		}
		mem := mod.ExportedMemory("memory")
		b, _ := mem.Read(0, mem.Size())
		return bytes.Clone(b)
	}
	if a, b := snapshot(in), snapshot(out); !bytes.Equal(a, b) {
		t.Fatalf("memory after instantiation differs (%d vs %d bytes)", len(a), len(b))
	}
}

func FuzzMerge(f *testing.F) {
	f.Add(module(1, append([]byte{2}, append(seg(0, 1), seg(5, 2)...)...)))
	f.Add([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 11, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		out, st, err := datamerge.Merge(in)
		if err != nil {
			return
		}
		if st.After > st.Before {
			t.Fatalf("merge made more segments: %+v", st)
		}
		// Merging is idempotent.
		again, _, err := datamerge.Merge(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("second merge changed the module: %v", err)
		}
	})
}
