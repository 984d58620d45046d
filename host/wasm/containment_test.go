package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd/systemdtest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

var evilSchemas = map[string]any{
	"params": json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["attack"],
		"properties": {"attack": {"type": "string"}, "path": {"type": "string"}, "url": {"type": "string"},
		"unit": {"type": "string"}}}`),
	"output": json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["ok"],
		"properties": {"ok": {"type": "boolean"}, "stolen": {"type": "string"}, "count": {"type": "integer"}}}`),
}

func evilManifest(t testing.TB, class string, caps []map[string]any, limits map[string]any) map[string]any {
	t.Helper()
	extra := map[string]any{"class": class}
	for k, v := range evilSchemas {
		extra[k] = v
	}
	if caps != nil {
		extra["capabilities"] = caps
	}
	if limits != nil {
		extra["limits"] = limits
	}
	return extra
}

func sha256File(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestContainment runs every attack of the evil word through the real host, in both isolations: each
// is stopped with its code, nothing it was after reaches its output, and the host keeps serving.
func TestContainment(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "inside.txt"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("TOP SECRET"))
	}))
	defer srv.Close()
	fake := systemdtest.New(map[string]string{
		"nginx.service": "ActiveState=active\nSubState=running\nLoadState=loaded\n",
		"sshd.service":  "ActiveState=active\nSubState=running\nLoadState=loaded\n",
	})
	truePath := "/bin/true"
	trueSum := sha256File(t, truePath)

	fsCaps := []map[string]any{{"cap": "fs.read", "paths": []string{root}}}
	cases := []struct {
		name     string
		class    string
		caps     []map[string]any
		limits   map[string]any
		params   map[string]any
		outcome  wasm.Outcome
		code     string
		denied   string // the capability that must be recorded as refused
		maxExtra time.Duration
		output   string // the exact output, when the attack completes
	}{
		{name: "WASI open of /etc/shadow", params: map[string]any{"attack": "wasi_open"}, outcome: wasm.Failed, code: errcode.WordFailed},
		{name: "WASI listing of /", params: map[string]any{"attack": "wasi_list"}, outcome: wasm.Failed, code: errcode.WordFailed},
		{name: "WASI sockets: accept on any descriptor, dial out", params: map[string]any{"attack": "wasi_socket", "url": strings.TrimPrefix(srv.URL, "http://")},
			outcome: wasm.Failed, code: errcode.WordFailed},
		{name: "environment is empty", params: map[string]any{"attack": "env"}, outcome: wasm.Completed, output: `{"ok":true}`},
		{name: "fs.read with ..", caps: fsCaps, params: map[string]any{"attack": "fs_read", "path": root + "/../../etc/shadow"},
			outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "fs.read"},
		{name: "fs.read through a symlink out of the root", caps: fsCaps, params: map[string]any{"attack": "fs_read", "path": root + "/escape"},
			outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "fs.read"},
		{name: "fs.read outside every root", caps: fsCaps, params: map[string]any{"attack": "fs_read", "path": secret},
			outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "fs.read"},
		{name: "fs.write not declared", caps: fsCaps, params: map[string]any{"attack": "fs_write", "path": root + "/inside.txt"},
			outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "fs.write"},
		{name: "undeclared capability", params: map[string]any{"attack": "undeclared_cap"},
			outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "exec.pinned"},
		{name: "capability outside lexicon_v1", params: map[string]any{"attack": "unknown_cap"},
			outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "shell.exec"},
		{name: "undeclared unit", caps: []map[string]any{{"cap": "systemd.unit", "units": []string{"nginx.service"}}},
			params: map[string]any{"attack": "unit", "unit": "sshd.service"}, outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "systemd.unit"},
		{name: "restart without systemd.restart", caps: []map[string]any{{"cap": "systemd.unit", "units": []string{"*"}}},
			params: map[string]any{"attack": "restart", "unit": "nginx.service"}, outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "systemd.restart"},
		{name: "net.http to an undeclared host", caps: []map[string]any{{"cap": "net.http", "hosts": []string{"example.invalid"}}},
			params: map[string]any{"attack": "http", "url": srv.URL + "/secret"}, outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "net.http"},
		{name: "net.http to the metadata address", caps: []map[string]any{{"cap": "net.http", "hosts": []string{"169.254.169.254"}}},
			params: map[string]any{"attack": "http", "url": "http://169.254.169.254/latest/meta-data/"}, outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "net.http"},
		{name: "exec.pinned of an unpinned program", class: "change",
			caps:   []map[string]any{{"cap": "exec.pinned", "programs": []map[string]any{{"path": truePath, "sha256": trueSum, "args": json.RawMessage(`{"type": "array"}`)}}}},
			params: map[string]any{"attack": "exec", "path": "/bin/sh"}, outcome: wasm.Failed, code: errcode.CapabilityDenied, denied: "exec.pinned"},
		{name: "infinite loop", limits: map[string]any{"wall_time_ms": 300}, params: map[string]any{"attack": "loop"},
			outcome: wasm.Failed, code: errcode.WordDeadlineExceeded, maxExtra: time.Second},
		{name: "sleeping past the deadline", limits: map[string]any{"wall_time_ms": 300}, params: map[string]any{"attack": "sleep"},
			outcome: wasm.Failed, code: errcode.WordDeadlineExceeded, maxExtra: time.Second},
		{name: "memory growth past the limit", limits: map[string]any{"memory_mib": 32}, params: map[string]any{"attack": "memory"},
			outcome: wasm.Failed, code: errcode.WordMemoryExceeded},
		{name: "stdout flood", limits: map[string]any{"output_bytes": 65536}, params: map[string]any{"attack": "stdout_flood"},
			outcome: wasm.Failed, code: errcode.WordOutputTooLarge},
		{name: "stderr flood", limits: map[string]any{"transcript_bytes": 65536}, params: map[string]any{"attack": "stderr_flood"},
			outcome: wasm.Failed, code: errcode.WordTranscriptTooLarge},
		{name: "panic", params: map[string]any{"attack": "panic"}, outcome: wasm.Failed, code: errcode.WordCrashed},
		{name: "exit without a reason", params: map[string]any{"attack": "exit"}, outcome: wasm.Failed, code: errcode.WordCrashed},
		{name: "params violating the schema", params: map[string]any{"attack": 5}, outcome: wasm.Refused, code: errcode.WordParamInvalid},
		{name: "params with an extra field", params: map[string]any{"attack": "panic", "shell": "id"}, outcome: wasm.Refused, code: errcode.WordParamInvalid},
		{name: "output violating its schema", params: map[string]any{"attack": "bad_output"}, outcome: wasm.Failed, code: errcode.WordOutputInvalid},
		{name: "failure claiming a host code", params: map[string]any{"attack": "fail_reserved"}, outcome: wasm.Failed, code: errcode.WordFailed},
	}
	isolations(t, func(t *testing.T, iso wasm.Isolation) {
		module, digest := testWord(t, "evil")
		h := newHost(t, cached(wasm.Config{Isolation: iso, Systemd: fake}))
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				class := tc.class
				if class == "" {
					class = "look"
				}
				mod := load(t, h, wordManifest(t, "evil", evilManifest(t, class, tc.caps, tc.limits)), module, digest)
				res := mod.Run(context.Background(), mustJSON(t, tc.params))
				took := time.Duration(res.DurationMS) * time.Millisecond
				if res.Outcome != tc.outcome || res.Code != tc.code {
					t.Fatalf("got %s %s (%s), want %s %s\ntranscript: %.500s", res.Outcome, res.Code, res.Message, tc.outcome, tc.code, res.Transcript)
				}
				if contains(string(res.Output), "SECRET") || contains(res.Transcript, "TOP SECRET") || contains(res.Message, "TOP SECRET") {
					t.Fatalf("secret leaked: %s %s", res.Output, res.Message)
				}
				if tc.denied != "" {
					found := false
					for _, c := range res.Capabilities {
						if c.Cap == tc.denied && !c.Allowed {
							found = true
						}
					}
					if !found {
						t.Fatalf("capability list %+v records no refused %s", res.Capabilities, tc.denied)
					}
					if d := res.Details["cap"]; d != tc.denied {
						t.Fatalf("details.cap = %v, want %s", d, tc.denied)
					}
				}
				if tc.output != "" && string(res.Output) != tc.output {
					t.Fatalf("output %s, want %s", res.Output, tc.output)
				}
				if tc.maxExtra > 0 && (took < 300*time.Millisecond || took > 300*time.Millisecond+tc.maxExtra) {
					t.Fatalf("stopped after %s of a 300ms wall time", took)
				}
			})
		}
		if hits.Load() != 0 {
			t.Fatalf("the undeclared server got %d requests", hits.Load())
		}
		if got := fake.Actions(); len(got) != 0 {
			t.Fatalf("systemd was asked to %v", got)
		}
		// The host is still up and serving after every attack.
		ref, refDigest := testWord(t, "ref")
		res := load(t, h, wordManifest(t, "ref", refParams), ref, refDigest).Run(context.Background(), []byte(`{"name": "after"}`))
		if res.Outcome != wasm.Completed {
			t.Fatalf("host after the attacks: %s %s", res.Code, res.Message)
		}
	})
}
