package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestMain(m *testing.M) {
	wasm.ServeWorkerIfChild()
	os.Exit(m.Run())
}

func runAgent(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), "lexicon-agent", "test", commands(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// signedRelease builds and signs a release holding the example word hello, with a trust folder that
// holds its publisher key.
func signedRelease(t *testing.T) (release, trust string) {
	t.Helper()
	mods := helloModules(t)
	key := keys.NewPublisher()
	release, trust = filepath.Join(t.TempDir(), "release"), filepath.Join(t.TempDir(), "trust")
	if _, err := registry.Build(registry.BuildOptions{Key: key, ModulesDir: mods, Release: "1.0.0", Sequence: 1,
		OutDir: release, Now: time.Now()}); err != nil {
		t.Fatalf("build: %v", err)
	}
	if err := registry.InitTrust(trust, []keys.PublisherPublic{key.Public()}, nil); err != nil {
		t.Fatal(err)
	}
	return release, trust
}

// helloModules is a modules folder, as lexicon-release build reads it, holding the example word hello.
func helloModules(t *testing.T) string {
	t.Helper()
	module, err := os.ReadFile("../../../build/wasm/examples/hello.wasm")
	if err != nil {
		t.Fatalf("build the words first (make wasm): %v", err)
	}
	manifest, err := os.ReadFile("../../../examples/word-hello/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	mods := t.TempDir()
	os.MkdirAll(filepath.Join(mods, "hello"), 0o755)
	os.WriteFile(filepath.Join(mods, "hello", "manifest.json"), manifest, 0o644)
	os.WriteFile(filepath.Join(mods, "hello", "hello.wasm"), module, 0o644)
	return mods
}

func TestWordRunFromRelease(t *testing.T) {
	release, trust := signedRelease(t)
	cache := filepath.Join(t.TempDir(), "cache")
	code, out, errOut := runAgent(t, "word", "run", "--release", release, "--trust", trust, "--word", "hello",
		"--params", `{"name": "node"}`, "--cache-dir", cache, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var env struct {
		OK           bool
		Outcome      string
		Output       struct{ Greeting string }
		Capabilities []struct {
			Cap     string
			Allowed bool
		}
		DurationMS *int64 `json:"duration_ms"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var fields map[string]json.RawMessage
	json.Unmarshal([]byte(out), &fields)
	for _, k := range []string{"outcome", "code", "message", "output", "transcript", "capabilities", "duration_ms"} {
		if _, ok := fields[k]; !ok {
			t.Fatalf("the result envelope has no %q: %s", k, out)
		}
	}
	if !env.OK || env.Outcome != "completed" || env.Output.Greeting != "hello, node" || len(env.Capabilities) != 1 || env.DurationMS == nil {
		t.Fatalf("%s", out)
	}
	if strings.Contains(errOut, "UNSIGNED") {
		t.Fatal("a signed run printed the --dev warning")
	}

	// The word ran and failed: the envelope is printed all the same, and the status is 1.
	code, out, _ = runAgent(t, "word", "run", "--release", release, "--trust", trust, "--word", "hello",
		"--params", `{"name": " "}`, "--cache-dir", cache, "-o", "json")
	if code != 1 || !strings.Contains(out, `"code": "hello.no_name"`) || !strings.Contains(out, `"ok": false`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestWordRunRefusesWhatIsNotPinned(t *testing.T) {
	release, trust := signedRelease(t)
	cache := filepath.Join(t.TempDir(), "cache")
	code, out, _ := runAgent(t, "word", "run", "--release", release, "--trust", trust, "--word", "disk_usage", "--cache-dir", cache, "-o", "json")
	if code != 1 || !strings.Contains(out, errcode.ModuleNotPinned) {
		t.Fatalf("a word not in the release: exit %d\n%s", code, out)
	}
	// Alter the module in the release's store: its bytes no longer hash to the pinned digest.
	blobs, _ := filepath.Glob(filepath.Join(release, "sha256", "*"))
	for _, b := range blobs {
		data, _ := os.ReadFile(b)
		if bytes.HasPrefix(data, []byte("\x00asm")) {
			data[len(data)-1] ^= 0xff
			os.WriteFile(b, data, 0o644)
		}
	}
	code, out, _ = runAgent(t, "word", "run", "--release", release, "--trust", trust, "--word", "hello", "--cache-dir", cache, "-o", "json")
	if code != 1 || !strings.Contains(out, errcode.ModuleDigestMismatch) {
		t.Fatalf("an altered module: exit %d\n%s", code, out)
	}
}

func TestWordRunDev(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	code, out, errOut := runAgent(t, "word", "run", "--dev", "--module", "../../../build/wasm/examples/hello.wasm",
		"--manifest", "../../../examples/word-hello/manifest.json", "--params", `{"name": "author"}`, "--cache-dir", cache)
	if code != 0 || !strings.Contains(out, "hello, author") || !strings.Contains(errOut, "UNSIGNED") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"word", "run", "--dev", "--module", "x.wasm"},
		{"word", "run", "--dev", "--module", "x.wasm", "--manifest", "m.json", "--release", "r"},
		{"word", "run", "--module", "x.wasm", "--manifest", "m.json"},
		{"word", "run", "--word", "hello"},
	} {
		if code, out, _ := runAgent(t, append(args, "-o", "json")...); code != 2 || !strings.Contains(out, errcode.UsageInvalid) {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
	}
}
