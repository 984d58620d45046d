package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

// run calls the CLI in-process and returns exit status, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), "lexicon-release", "test", commands(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// runJSON runs with -o json and decodes stdout.
func runJSON(t *testing.T, args ...string) (int, map[string]any) {
	t.Helper()
	code, out, errOut := run(t, append(args, "-o", "json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: stdout is not JSON: %v\n%s\n%s", args, err, out, errOut)
	}
	return code, m
}

const manifestTmpl = `{"schema": "lexicon/manifest/v1", "name": "hello", "kind": "word", "version": "VERSION", "class": "look",
  "summary": "Says hello.", "params": {"type": "object", "additionalProperties": false, "properties": {"name": {"type": "string"}}},
  "output": {"type": "object", "properties": {"greeting": {"type": "string"}}}, "module": {"file": "hello.wasm"}}`

func modules(t *testing.T, version string, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	m := strings.Replace(manifestTmpl, "VERSION", version, 1)
	if edit != nil {
		m = edit(m)
	}
	must(t, os.MkdirAll(filepath.Join(dir, "hello"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "hello", "manifest.json"), []byte(m), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "hello", "hello.wasm"), []byte("\x00asm hello "+version), 0o644))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	lg := tlogtest.New("log.lexicon.test")
	srv := lg.Server()
	defer srv.Close()
	work := t.TempDir()
	k := filepath.Join(work, "keys")
	logKey := filepath.Join(work, "log.pub")
	must(t, keys.WritePublic(logKey, lg.PublicKey().String()))

	code, res := runJSON(t, "keygen", "--out", k)
	if code != 0 || res["ok"] != true || !strings.HasPrefix(res["fingerprint"].(string), "SHA256:") {
		t.Fatalf("keygen: %d %v", code, res)
	}
	if fi, _ := os.Stat(filepath.Join(k, "publisher.key")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %o", fi.Mode().Perm())
	}
	r1 := filepath.Join(work, "r1")
	if code, res := runJSON(t, "build", "--key", filepath.Join(k, "publisher.key"), "--modules", modules(t, "1.0.0", nil),
		"--release", "1.0.0", "--sequence", "1", "--out", r1); code != 0 {
		t.Fatalf("build: %v", res)
	}
	if code, res := runJSON(t, "log", "--rekor", srv.URL, r1); code != 0 || res["log_index"] != float64(0) {
		t.Fatalf("log: %d %v", code, res)
	}
	trust := filepath.Join(work, "trust")
	if code, res := runJSON(t, "trust", "init", "--out", trust, "--key", filepath.Join(k, "publisher.pub"), "--log-key", logKey); code != 0 {
		t.Fatalf("trust init: %v", res)
	}
	code, out, _ := run(t, "verify", r1, "--trust", trust)
	if code != 0 || strings.Count(out, "PASS") != 8 || !strings.Contains(out, "accepted") {
		t.Fatalf("verify: %d\n%s", code, out)
	}

	// A successor that breaks the word's contract is refused, in JSON with its code.
	code, res = runJSON(t, "build", "--key", filepath.Join(k, "publisher.key"), "--previous", r1, "--release", "1.1.0",
		"--sequence", "2", "--out", filepath.Join(work, "bad"),
		"--modules", modules(t, "1.1.0", func(m string) string {
			return strings.Replace(m, `"name": {"type": "string"}`, `"name": {"type": "integer"}`, 1)
		}))
	if code != 1 || res["ok"] != false || res["code"] != "contract.broken" {
		t.Fatalf("broken contract: %d %v", code, res)
	}
	if _, err := os.Stat(filepath.Join(work, "bad", "statement.bundle.json")); err == nil {
		t.Fatal("a refused build wrote a release")
	}

	// A compatible successor, unlogged: the trust folder holds log keys, so it is refused.
	r2 := filepath.Join(work, "r2")
	if code, res := runJSON(t, "build", "--key", filepath.Join(k, "publisher.key"), "--previous", r1, "--release", "1.1.0",
		"--sequence", "2", "--out", r2, "--modules", modules(t, "1.1.0", nil)); code != 0 {
		t.Fatalf("build r2: %v", res)
	}
	code, out, errOut := run(t, "verify", r2, "--trust", trust)
	if code != 1 || !strings.Contains(out, "FAIL  transparency_log") || !strings.Contains(errOut, "statement.unlogged") {
		t.Fatalf("unlogged verify: %d\n%s\n%s", code, out, errOut)
	}
	if code, res := runJSON(t, "diff", r1, r2); code != 0 || len(res["changed"].([]any)) != 1 || len(res["broken"].([]any)) != 0 {
		t.Fatalf("diff: %v", res)
	}
}

func TestUsage(t *testing.T) {
	if code, out, _ := run(t, "--help"); code != 0 || !strings.Contains(out, "\n  verify ") {
		t.Fatalf("--help: %d %s", code, out)
	}
	if code, out, _ := run(t, "build", "--help"); code != 0 || !strings.Contains(out, "--sequence") {
		t.Fatalf("build --help: %d %s", code, out)
	}
	if code, res := runJSON(t, "verify", "somewhere"); code != 2 || res["code"] != "usage.invalid" {
		t.Fatalf("verify without --trust: %d %v", code, res)
	}
	if code, res := runJSON(t, "build", "--bogus"); code != 2 || res["code"] != "usage.invalid" {
		t.Fatalf("unknown flag: %d %v", code, res)
	}
	if code, _, errOut := run(t, "frobnicate"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("unknown command: %d %s", code, errOut)
	}
}

// TestBinaryExitStatus runs the real binary: exit status 0 only on success.
func TestBinaryExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "lexicon-release")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	if err := exec.Command(bin, "keygen", "--out", dir).Run(); err != nil {
		t.Fatalf("keygen: %v", err)
	}
	cmd := exec.Command(bin, "verify", dir, "--trust", dir, "-o", "json")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errorsAs(err, &exit) || exit.ExitCode() != 1 || !bytes.Contains(out, []byte(`"ok": false`)) {
		t.Fatalf("failing verify: %v\n%s", err, out)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// TestBuildHistory: a word dropped in release 2 and brought back in release 3 as another class, or with
// other params, passes a check against release 2 alone, and is refused by --history, which checks it
// against release 1 too. Nothing is written for a refused build.
func TestBuildHistory(t *testing.T) {
	work := t.TempDir()
	k := filepath.Join(work, "keys")
	if code, res := runJSON(t, "keygen", "--out", k); code != 0 {
		t.Fatalf("keygen: %v", res)
	}
	key := filepath.Join(k, "publisher.key")
	hist := filepath.Join(work, "history")
	r1, r2 := filepath.Join(hist, "r1"), filepath.Join(hist, "r2")
	if code, res := runJSON(t, "build", "--key", key, "--modules", modules(t, "1.0.0", nil),
		"--release", "1.0.0", "--sequence", "1", "--out", r1); code != 0 {
		t.Fatalf("build r1: %v", res)
	}
	bye := func(m string) string { return strings.Replace(m, `"name": "hello"`, `"name": "bye"`, 1) }
	if code, res := runJSON(t, "build", "--key", key, "--modules", modules(t, "1.1.0", bye), "--previous", r1,
		"--release", "1.1.0", "--sequence", "2", "--out", r2); code != 0 {
		t.Fatalf("build r2 without hello: %v", res)
	}
	for _, tc := range []struct{ name, field, from, to string }{
		{"class", "class", `"class": "look"`, `"class": "destructive"`},
		{"params", "params.name", `"name": {"type": "string"}`, `"name": {"type": "integer"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			back := modules(t, "2.0.0", func(m string) string { return strings.Replace(m, tc.from, tc.to, 1) })
			// Against release 2 alone the word looks new: this is the hole --history closes.
			if code, res := runJSON(t, "build", "--key", key, "--modules", back, "--previous", r2,
				"--release", "2.0.0", "--sequence", "3", "--out", filepath.Join(t.TempDir(), "r3")); code != 0 {
				t.Fatalf("build against the previous release only: %v", res)
			}
			out := filepath.Join(t.TempDir(), "r3")
			code, res := runJSON(t, "build", "--key", key, "--modules", back, "--previous", r2, "--history", hist,
				"--release", "2.0.0", "--sequence", "3", "--out", out)
			details, _ := res["details"].(map[string]any)
			if code != 1 || res["code"] != "contract.broken" || details["word"] != "hello" || details["field"] != tc.field {
				t.Fatalf("re-added word with another %s: %d %v", tc.name, code, res)
			}
			if _, err := os.Stat(filepath.Join(out, "statement.bundle.json")); err == nil {
				t.Fatal("a refused build wrote a release")
			}
		})
	}
	// The same word brought back unchanged is taken.
	if code, res := runJSON(t, "build", "--key", key, "--modules", modules(t, "2.0.0", nil), "--previous", r2, "--history", hist,
		"--release", "2.0.0", "--sequence", "3", "--out", filepath.Join(work, "r3")); code != 0 {
		t.Fatalf("build with an unchanged word: %v", res)
	}
	// A history release at or above the new sequence is refused: the history is out of order.
	if code, res := runJSON(t, "build", "--key", key, "--modules", modules(t, "2.0.0", nil), "--history", hist,
		"--release", "2.0.0", "--sequence", "2", "--out", filepath.Join(work, "r3b")); code != 1 || res["code"] != "statement.rollback" {
		t.Fatalf("build below the history: %d %v", code, res)
	}
}
