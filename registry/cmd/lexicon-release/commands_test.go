package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// publisher makes a key with keygen and returns its private and public key files.
func publisher(t *testing.T) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "keys")
	if code, res := runJSON(t, "keygen", "--out", dir); code != 0 {
		t.Fatalf("keygen: %v", res)
	}
	return filepath.Join(dir, "publisher.key"), filepath.Join(dir, "publisher.pub")
}

// addWord adds a word module folder to a modules folder.
func addWord(t *testing.T, dir, name, manifest string, artifact []byte) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, name, "manifest.json"), []byte(manifest), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, name, name+".wasm"), artifact, 0o644))
}

func wordManifest(name, version, params, output string) string {
	return `{"schema": "lexicon/manifest/v1", "name": "` + name + `", "kind": "word", "version": "` + version + `", "class": "look",
  "summary": "A test word.", "params": {"type": "object", "additionalProperties": false, "properties": {` + params + `}},
  "output": {"type": "object", "properties": {` + output + `}}, "module": {"file": "` + name + `.wasm"}}`
}

// readStatement decodes a release folder's statement, without trust.
func readStatement(t *testing.T, dir string) *statement.Statement {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, registry.BundleFile))
	must(t, err)
	b, err := statement.ParseBundle(data)
	must(t, err)
	st, err := statement.Decode(b.GetDsseEnvelope().Payload)
	must(t, err)
	return st
}

// TestDiff: diff names added, removed and changed modules and every broken contract, as text and JSON.
func TestDiff(t *testing.T) {
	key, _ := publisher(t)
	const params = `"name": {"type": "string"}, "count": {"type": "integer"}`
	const output = `"greeting": {"type": "string"}, "lang": {"type": "string"}`
	oldMods, newMods := t.TempDir(), t.TempDir()
	addWord(t, oldMods, "hello", wordManifest("hello", "1.0.0", params, output), []byte("\x00asm hello"))
	addWord(t, oldMods, "greet", wordManifest("greet", "1.0.0", params, output), []byte("\x00asm greet"))
	addWord(t, oldMods, "bye", wordManifest("bye", "1.0.0", params, output), []byte("\x00asm bye"))
	// hello loses a param and changes the other's type; greet loses an output field; bye goes; new comes.
	addWord(t, newMods, "hello", wordManifest("hello", "2.0.0", `"name": {"type": "integer"}`, output), []byte("\x00asm hello 2"))
	addWord(t, newMods, "greet", wordManifest("greet", "1.1.0", params, `"greeting": {"type": "string"}`), []byte("\x00asm greet"))
	addWord(t, newMods, "new", wordManifest("new", "1.0.0", params, output), []byte("\x00asm new"))
	work := t.TempDir()
	r1, r2 := filepath.Join(work, "r1"), filepath.Join(work, "r2")
	for _, b := range []struct{ mods, out, seq string }{{oldMods, r1, "1"}, {newMods, r2, "2"}} {
		if code, res := runJSON(t, "build", "--key", key, "--modules", b.mods, "--release", "1.0."+b.seq, "--sequence", b.seq, "--out", b.out); code != 0 {
			t.Fatalf("build %s: %v", b.out, res)
		}
	}

	code, out, errOut := run(t, "diff", r1, r2)
	if code != 0 {
		t.Fatalf("diff: %d\n%s\n%s", code, out, errOut)
	}
	want := []string{
		"1.0.1 (sequence 1) -> 1.0.2 (sequence 2)",
		"+ word new@1.0.0",
		"- word bye@1.0.0",
		"~ word greet 1.0.0 -> 1.1.0 (module changed: false, manifest changed: true)",
		"~ word hello 1.0.0 -> 2.0.0 (module changed: true, manifest changed: true)",
		"! contract broken: greet: output.lang removed",
		"! contract broken: hello: params.count removed",
		"! contract broken: hello: params.name changed",
	}
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("diff text lacks %q", w)
		}
	}
	if lines := strings.Count(out, "\n"); lines != len(want) {
		t.Errorf("diff text has %d lines, want %d:\n%s", lines, len(want), out)
	}

	code, res := runJSON(t, "diff", r1, r2)
	if code != 0 || res["ok"] != true {
		t.Fatalf("diff -o json: %d %v", code, res)
	}
	names := func(key, field string) []string {
		var out []string
		for _, e := range res[key].([]any) {
			out = append(out, e.(map[string]any)[field].(string))
		}
		return out
	}
	if got := strings.Join(names("added", "name"), ","); got != "new" {
		t.Errorf("added %s", got)
	}
	if got := strings.Join(names("removed", "name"), ","); got != "bye" {
		t.Errorf("removed %s", got)
	}
	if got := strings.Join(names("changed", "name"), ","); got != "greet,hello" {
		t.Errorf("changed %s", got)
	}
	var broken []string
	for _, b := range res["broken"].([]any) {
		m := b.(map[string]any)
		broken = append(broken, m["word"].(string)+" "+m["field"].(string)+" "+m["change"].(string))
	}
	if got := strings.Join(broken, "; "); got != "greet output.lang removed; hello params.count removed; hello params.name changed" {
		t.Errorf("broken %s", got)
	}

	if code, out, _ := run(t, "diff", r1, r1); code != 0 || !strings.Contains(out, "no module changed") {
		t.Errorf("diff of a release with itself: %d %s", code, out)
	}
}

// TestTestlogAsTheREADME runs the README's round trip: testlog in the background, log against it,
// trust init with the key file it wrote, verify.
func TestTestlogAsTheREADME(t *testing.T) {
	work := t.TempDir()
	logKey := filepath.Join(work, "log.pub")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	stdoutR, stdoutW := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- cli.Run(ctx, "lexicon-release", "test", commands(),
			[]string{"testlog", "--listen", "127.0.0.1:0", "--log-key-out", logKey, "-o", "json"}, stdoutW, io.Discard)
		stdoutW.Close()
	}()
	// The log is serving once its ready line says where; that line is the signal to go on.
	stdout := bufio.NewReader(stdoutR)
	line, err := stdout.ReadString('\n')
	var ready testLogReady
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil || !strings.HasPrefix(ready.URL, "http://127.0.0.1:") || ready.LogKeyFile != logKey {
		t.Fatalf("testlog's ready line: %q %v", line, err)
	}
	url := ready.URL
	summary := make(chan string, 1)
	go func() { rest, _ := io.ReadAll(stdout); summary <- string(rest) }()

	data, err := os.ReadFile(logKey)
	must(t, err)
	lk, err := keys.ParseLogPublic(strings.TrimSpace(string(data)))
	if err != nil || lk.Origin() != "log.lexicon.test" {
		t.Fatalf("--log-key-out holds %q: %v", data, err)
	}

	key, pub := publisher(t)
	rel := filepath.Join(work, "rel-1")
	if code, res := runJSON(t, "build", "--key", key, "--modules", modules(t, "1.0.0", nil), "--release", "1.0.0", "--sequence", "1", "--out", rel); code != 0 {
		t.Fatalf("build: %v", res)
	}
	if code, res := runJSON(t, "log", "--rekor", url, rel); code != 0 || res["log_index"] != float64(0) || res["tree_size"] != float64(1) {
		t.Fatalf("log --rekor %s: %d %v", url, code, res)
	}
	trust := filepath.Join(work, "trust")
	if code, res := runJSON(t, "trust", "init", "--out", trust, "--key", pub, "--log-key", logKey); code != 0 {
		t.Fatalf("trust init: %v", res)
	}
	code, out, errOut := run(t, "verify", rel, "--trust", trust)
	if code != 0 || !strings.Contains(out, "PASS  transparency_log") || !strings.Contains(out, "release 1.0.0 sequence 1 verified; the trust folder is unchanged") {
		t.Fatalf("verify: %d\n%s\n%s", code, out, errOut)
	}

	stop()
	if code := <-exited; code != 0 {
		t.Fatalf("testlog exited %d", code)
	}
	if out := <-summary; !strings.Contains(out, `"entries": 1`) {
		t.Fatalf("testlog's summary: %s", out)
	}
}

func TestKeygenName(t *testing.T) {
	dir := t.TempDir()
	code, res := runJSON(t, "keygen", "--out", dir, "--name", "release-2026")
	if code != 0 || res["name"] != "release-2026" {
		t.Fatalf("keygen --name: %d %v", code, res)
	}
	keyFile, pubFile := filepath.Join(dir, "release-2026.key"), filepath.Join(dir, "release-2026.pub")
	if res["key_file"] != keyFile || res["pub_file"] != pubFile {
		t.Fatalf("files %v %v", res["key_file"], res["pub_file"])
	}
	fi, err := os.Stat(keyFile)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s mode %04o, want 0600", keyFile, fi.Mode().Perm())
	}
	fi, err = os.Stat(pubFile)
	must(t, err)
	if fi.Mode().Perm()&0o022 != 0 {
		t.Fatalf("%s mode %04o is writable by others", pubFile, fi.Mode().Perm())
	}
	priv, err := keys.ReadPublisherPrivateFile(keyFile)
	must(t, err)
	pub, err := readPublic(pubFile)
	must(t, err)
	if !priv.Public().Equal(pub) || res["public_key"] != pub.String() || res["fingerprint"] != pub.Fingerprint() {
		t.Fatalf("the two files and the result disagree: %v", res)
	}
	// A key is never overwritten.
	if code, res := runJSON(t, "keygen", "--out", dir, "--name", "release-2026"); code != 1 || res["code"] != errcode.IOFailed {
		t.Fatalf("second keygen: %d %v", code, res)
	}
	again, err := keys.ReadPublisherPrivateFile(keyFile)
	if err != nil || !again.Public().Equal(pub) {
		t.Fatalf("the key file changed: %v", err)
	}
	for _, name := range []string{"", "../escape", "sub/key"} {
		if code, res := runJSON(t, "keygen", "--out", dir, "--name", name); code != 2 || res["code"] != errcode.UsageInvalid {
			t.Fatalf("--name %q: %d %v", name, code, res)
		}
	}
}

// TestBuildExpires: the statement expires when --expires says, counted from its issue time.
func TestBuildExpires(t *testing.T) {
	key, _ := publisher(t)
	mods := modules(t, "1.0.0", nil)
	for _, tc := range []struct {
		flag []string
		want time.Duration
	}{
		{nil, 90 * 24 * time.Hour},
		{[]string{"--expires", "90d"}, 90 * 24 * time.Hour},
		{[]string{"--expires", "7d"}, 7 * 24 * time.Hour},
		{[]string{"--expires", "36h"}, 36 * time.Hour},
	} {
		out := filepath.Join(t.TempDir(), "r")
		code, res := runJSON(t, append([]string{"build", "--key", key, "--modules", mods, "--release", "1.0.0", "--sequence", "1", "--out", out}, tc.flag...)...)
		if code != 0 {
			t.Fatalf("build %v: %v", tc.flag, res)
		}
		p := readStatement(t, out).Predicate
		if got := p.ExpiresAt.Sub(p.IssuedAt); got != tc.want {
			t.Errorf("build %v: statement valid for %s, want %s", tc.flag, got, tc.want)
		}
		if res["expires_at"] != p.ExpiresAt.Format(time.RFC3339) {
			t.Errorf("build %v: result says expires_at %v, statement %s", tc.flag, res["expires_at"], p.ExpiresAt)
		}
	}
	for _, bad := range []string{"0d", "-3d", "d", "ninety", "-1h", "0s"} {
		out := filepath.Join(t.TempDir(), "r")
		code, res := runJSON(t, "build", "--key", key, "--modules", mods, "--release", "1.0.0", "--sequence", "1", "--out", out, "--expires", bad)
		if code != 2 || res["code"] != errcode.UsageInvalid || !strings.Contains(res["message"].(string), "--expires") {
			t.Errorf("--expires %q: %d %v", bad, code, res)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--expires %q wrote %s", bad, out)
		}
	}
}

// TestBuildProgress: build reports each module and its size on stderr as it goes, in text and in JSON
// mode, so stdout stays the result alone.
func TestBuildProgress(t *testing.T) {
	key, _ := publisher(t)
	mods := t.TempDir()
	const params, output = `"name": {"type": "string"}`, `"greeting": {"type": "string"}`
	addWord(t, mods, "big", wordManifest("big", "1.0.0", params, output), bytes.Repeat([]byte{0}, 3<<20))
	addWord(t, mods, "mid", wordManifest("mid", "1.0.0", params, output), bytes.Repeat([]byte{0}, 1536))
	addWord(t, mods, "tiny", wordManifest("tiny", "1.0.0", params, output), []byte("\x00asm"))
	agent := buildAgent(t, "1.2.3", runtime.GOARCH, false)
	fi, err := os.Stat(agent)
	must(t, err)
	for _, mode := range []string{"text", "json"} {
		var stdout, stderr bytes.Buffer
		code := cli.Run(context.Background(), "lexicon-release", "test", commands(), []string{"build", "--key", key, "--modules", mods,
			"--release", "1.2.3", "--sequence", "1", "--out", filepath.Join(t.TempDir(), "r"), "--agent", "linux/" + runtime.GOARCH + "=" + agent, "-o", mode}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("%s: build: %d\n%s\n%s", mode, code, stdout.String(), stderr.String())
		}
		want := "[1/3] word big@1.0.0: 3.0 MiB\n[2/3] word mid@1.0.0: 1.5 KiB\n[3/3] word tiny@1.0.0: 4 B\nagent linux/" + runtime.GOARCH + ": " + fmt.Sprintf("%.1f MiB", float64(fi.Size())/(1<<20)) + "\n"
		if stderr.String() != want {
			t.Errorf("%s: progress\n%s\nwant\n%s", mode, stderr.String(), want)
		}
		if strings.Contains(stdout.String(), "[1/3]") {
			t.Errorf("%s: progress on stdout: %s", mode, stdout.String())
		}
	}
}

// TestJSONFailures: in -o json, one refusal per subcommand is {"ok": false, "code", "message"} on
// stdout, with the refusal's own code.
func TestJSONFailures(t *testing.T) {
	key, pub := publisher(t)
	work := t.TempDir()
	rel := filepath.Join(work, "rel")
	if code, res := runJSON(t, "build", "--key", key, "--modules", modules(t, "1.0.0", nil), "--release", "1.0.0", "--sequence", "1", "--out", rel); code != 0 {
		t.Fatalf("build: %v", res)
	}
	nodeKey := filepath.Join(work, "node.pub")
	must(t, keys.WritePublic(nodeKey, keys.NewNode().Public().String()))
	notAFolder := filepath.Join(work, "file")
	must(t, os.WriteFile(notAFolder, []byte("x"), 0o644))
	cases := []struct {
		args []string
		exit int
		code string
	}{
		{[]string{"keygen", "--out", filepath.Join(notAFolder, "keys")}, 1, errcode.IOFailed},
		{[]string{"backup-keygen", "--out", filepath.Join(notAFolder, "keys")}, 1, errcode.IOFailed},
		{[]string{"build", "--key", key, "--release", "1.0.0", "--sequence", "2", "--out", filepath.Join(work, "r2"),
			"--modules", modules(t, "1.0.0", func(m string) string { return m[:len(m)/2] })}, 1, errcode.ManifestMalformed},
		{[]string{"chain", "add", "--key", key, "--target", nodeKey, "--from", "2", "--out", filepath.Join(work, "chain")}, 1, errcode.KeyMalformed},
		{[]string{"chain", "retire", "--key", pub, "--target", pub, "--from", "2", "--out", filepath.Join(work, "chain")}, 1, errcode.KeyFileUntrusted},
		{[]string{"log", "--rekor", "http://127.0.0.1:1", "--timeout", "5s", rel}, 1, errcode.LogUnavailable},
		{[]string{"log", "--rekor", "http://127.0.0.1:1", "--tsa", "http://127.0.0.1:1/api/v1/timestamp", "--timeout", "5s", rel}, 1, errcode.LogUnavailable},
		{[]string{"trust", "init", "--out", filepath.Join(work, "trust-tsa"), "--key", pub, "--tsa-chain", notAFolder}, 1, errcode.KeyMalformed},
		{[]string{"verify", rel, "--trust", filepath.Join(work, "no-trust")}, 1, errcode.IOFailed},
		{[]string{"diff", rel, work}, 1, errcode.StatementMalformed},
		{[]string{"trust", "init", "--out", filepath.Join(work, "trust"), "--key", nodeKey}, 1, errcode.KeyMalformed},
		{[]string{"trust", "witnesses", "--trust", filepath.Join(work, "no-trust"), "--none"}, 1, errcode.IOFailed},
		{[]string{"prove", "--rekor", "http://127.0.0.1:1", "--log-key", nodeKey, "--previous", rel, rel}, 1, errcode.KeyMalformed},
		{[]string{"testlog", "--listen", "127.0.0.1:notaport", "--log-key-out", filepath.Join(work, "log.pub")}, 1, errcode.IOFailed},
		{[]string{"wasmpost", "--out", filepath.Join(work, "out.wasm"), notAFolder}, 1, errcode.WordModuleInvalid},
		{[]string{"new", "word", "greet", "--dir", filepath.Join(notAFolder, "greet")}, 1, errcode.IOFailed},
		{[]string{"rebuild-check", "--release", rel, "--source", notAFolder}, 1, errcode.IOFailed},
		{[]string{"renew", "--key", key, "--previous", rel, "--sequence", "1", "--out", filepath.Join(work, "renewed")}, 1, errcode.StatementRollback},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		code, res := runJSON(t, tc.args...)
		if code != tc.exit || res["ok"] != false || res["code"] != tc.code || res["message"] == "" || res["message"] == nil {
			t.Errorf("%v: exit %d %v, want exit %d code %s", tc.args, code, res, tc.exit, tc.code)
		}
		if msg, _ := res["message"].(string); !strings.HasPrefix(msg, tc.code+": ") {
			t.Errorf("%v: message %q does not lead with its code", tc.args, msg)
		}
		c, _ := find(tc.args)
		seen[c] = true
	}
	for _, c := range commands() {
		if c.Run != nil && !seen[c.Path] {
			t.Errorf("no JSON failure case for %s", c.Path)
		}
	}
}

// find names the subcommand args call.
func find(args []string) (string, bool) {
	for _, c := range commands() {
		if w := strings.Fields(c.Path); c.Run != nil && len(w) <= len(args) && strings.Join(w, " ") == strings.Join(args[:len(w)], " ") {
			return c.Path, true
		}
	}
	return "", false
}

// TestRefusalsInWords: a chain file or a manifest of the wrong shape is refused saying what was
// expected in JSON's words, never naming the Go type it was read into.
func TestRefusalsInWords(t *testing.T) {
	key, _ := publisher(t)
	work := t.TempDir()
	chain := filepath.Join(work, "chain.jsonl")
	for _, tc := range []struct {
		name, chain string
		edit        func(string) string
		code, says  string
	}{
		{"a chain line of an array", "[1, 2]\n", nil, errcode.KeyMalformed, "line 1 is not a key-chain entry: the document must be an object, not an array"},
		{"a chain entry with a number for its key", `{"key": 5}` + "\n", nil, errcode.KeyMalformed, "/key must be a string, not a number"},
		{"a manifest's name of a number", "", func(m string) string { return strings.Replace(m, `"name": "hello"`, `"name": 5`, 1) },
			errcode.ManifestMalformed, "/name must be a string, not a number"},
		{"a manifest that is an array", "", func(string) string { return "[1]" }, errcode.ManifestMalformed, "the document must be an object, not an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"build", "--key", key, "--modules", modules(t, "1.0.0", tc.edit), "--release", "1.0.0", "--sequence", "1",
				"--out", filepath.Join(t.TempDir(), "r")}
			if tc.chain != "" {
				must(t, os.WriteFile(chain, []byte(tc.chain), 0o644))
				args = append(args, "--chain", chain)
			}
			code, res := runJSON(t, args...)
			msg, _ := res["message"].(string)
			if code != 1 || res["code"] != tc.code || !strings.Contains(msg, tc.says) || strings.Contains(msg, "Go ") || strings.Contains(msg, "json:") {
				t.Fatalf("exit %d %v, want %s saying %q", code, res, tc.code, tc.says)
			}
		})
	}
}
