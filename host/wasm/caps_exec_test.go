package wasm_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

func TestExecPinned(t *testing.T) {
	dir := t.TempDir()
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, to, b, 0o755)
	}
	echo := filepath.Join(dir, "echo")
	copyFile("/bin/echo", echo)
	swapped := filepath.Join(dir, "swapped")
	copyFile("/bin/echo", swapped)
	script := filepath.Join(dir, "script.sh")
	writeFile(t, script, []byte("#!/bin/sh\necho script says \"$1\"\n"), 0o755)
	sleeper := filepath.Join(dir, "sleep")
	copyFile("/bin/sleep", sleeper)
	program := func(path, schema string) map[string]any {
		return map[string]any{"path": path, "sha256": sha256File(t, path), "args": json.RawMessage(schema)}
	}
	words := `{"type": "array", "maxItems": 2, "items": {"type": "string", "pattern": "^[a-z]+$"}}`
	progs := []map[string]any{
		program(echo, words), program(swapped, words), program(script, words),
		program(sleeper, `{"type": "array", "items": {"const": "5"}}`),
	}
	copyFile("/bin/sh", swapped) // after pinning: the bytes on disk are no longer the pinned ones

	h := newHost(t, cached(wasm.Config{}))
	p := newProber(t, h, "change", []map[string]any{{"cap": "exec.pinned", "programs": progs, "timeout_ms": 300, "max_bytes": 64}})
	var r capv1.ExecResult
	p.must(map[string]any{"cap": "exec.pinned", "path": echo, "args": []string{"hello", "node"}}, &r)
	if string(r.Stdout) != "hello node\n" || r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	p.must(map[string]any{"cap": "exec.pinned", "path": script, "args": []string{"hi"}}, &r)
	if string(r.Stdout) != "script says hi\n" {
		t.Fatalf("script: %+v (stderr %s)", r, r.Stderr)
	}
	for _, tc := range []struct {
		name string
		req  map[string]any
		code string
	}{
		{"arguments outside the schema", map[string]any{"cap": "exec.pinned", "path": echo, "args": []string{"-e", "x"}}, errcode.CapabilityDenied},
		{"too many arguments", map[string]any{"cap": "exec.pinned", "path": echo, "args": []string{"a", "b", "c"}}, errcode.CapabilityDenied},
		{"bytes changed since pinning", map[string]any{"cap": "exec.pinned", "path": swapped, "args": []string{}}, errcode.CapabilityDenied},
		{"unpinned program", map[string]any{"cap": "exec.pinned", "path": "/bin/sh", "args": []string{"-c", "id"}}, errcode.CapabilityDenied},
		{"time cap", map[string]any{"cap": "exec.pinned", "path": sleeper, "args": []string{"5"}}, errcode.CapabilityTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := p.one(tc.req, nil); code != tc.code {
				t.Fatalf("code %q, want %q", code, tc.code)
			}
		})
	}
}

func TestCallBudget(t *testing.T) {
	h := newHost(t, cached(wasm.Config{}))
	p := newProber(t, h, "look", []map[string]any{{"cap": "sys.facts"}})
	reqs := make([]map[string]any, 1002)
	for i := range reqs {
		reqs[i] = map[string]any{"cap": "sys.facts"}
	}
	answers, res := p.run(reqs...)
	if answers[999].Error != nil || answers[1000].Error == nil || answers[1000].Error.Code != errcode.CapabilityBudgetExceeded {
		t.Fatalf("answer 1000: %+v", answers[1000])
	}
	if n := len(res.Capabilities); n != 1001 {
		t.Fatalf("%d calls recorded, want the 1000 allowed and the first refused", n)
	}
	_ = wasm.Completed
}
