package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// tinyModule is a WebAssembly module with one memory and three active data segments close enough
// together that wasmpost merges them into one.
func tinyModule() []byte {
	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	m = append(m, 5, 3, 1, 0, 1) // memory section: one memory of one page
	data := []byte{3}
	data = append(data, 0, 0x41, 0, 0x0b, 2, 'a', 'b') // at 0
	data = append(data, 0, 0x41, 2, 0x0b, 2, 'c', 'd') // at 2, adjacent
	data = append(data, 0, 0x41, 16, 0x0b, 1, 'z')     // at 16: a gap of 12 zeros, within MaxGap
	m = append(m, 11, byte(len(data)))
	return append(m, data...)
}

// TestWasmpost: the subcommand merges a module's segments into --out and says what it did; running it
// on its own output changes nothing; what is not a module, a missing input and a missing --out are
// refused with their codes.
func TestWasmpost(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.wasm"), filepath.Join(dir, "out.wasm")
	must(t, os.WriteFile(in, tinyModule(), 0o644))

	code, res := runJSON(t, "wasmpost", "--out", out, in)
	if code != 0 || res["segments_before"] != 3.0 || res["segments_after"] != 1.0 || res["out"] != out {
		t.Fatalf("exit %d: %v", code, res)
	}
	merged, err := os.ReadFile(out)
	must(t, err)
	if res["bytes"] != float64(len(merged)) || bytes.Equal(merged, tinyModule()) {
		t.Fatalf("%v: %d bytes written", res, len(merged))
	}
	if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("the temporary file was left behind: %v", err)
	}

	again := filepath.Join(dir, "again.wasm")
	code, stdout, _ := run(t, "wasmpost", in, "--out", again)
	if want := again + ": 3 data segments -> 1, "; code != 0 || !bytes.HasPrefix([]byte(stdout), []byte(want)) {
		t.Fatalf("text: exit %d: %q, want prefix %q", code, stdout, want)
	}
	code, res = runJSON(t, "wasmpost", "--out", again, out)
	if code != 0 || res["segments_before"] != 1.0 || res["segments_after"] != 1.0 {
		t.Fatalf("its own output: exit %d: %v", code, res)
	}
	if b, _ := os.ReadFile(again); !bytes.Equal(b, merged) {
		t.Fatal("wasmpost changed a module it had already merged")
	}

	notWasm := filepath.Join(dir, "not.wasm")
	must(t, os.WriteFile(notWasm, []byte("#!/bin/sh\n"), 0o644))
	for _, tc := range []struct {
		args   []string
		status int
		code   string
	}{
		{[]string{"wasmpost", "--out", filepath.Join(dir, "x.wasm"), notWasm}, 1, errcode.WordModuleInvalid},
		{[]string{"wasmpost", "--out", filepath.Join(dir, "x.wasm"), filepath.Join(dir, "missing.wasm")}, 1, errcode.IOFailed},
		{[]string{"wasmpost", in}, 2, errcode.UsageInvalid},
		{[]string{"wasmpost", "--out", out}, 2, errcode.UsageInvalid},
	} {
		if code, res := runJSON(t, tc.args...); code != tc.status || res["code"] != tc.code {
			t.Errorf("%v: exit %d: %v, want %d %s", tc.args, code, res, tc.status, tc.code)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.wasm")); !os.IsNotExist(err) {
		t.Fatalf("a refused module was written: %v", err)
	}
}
