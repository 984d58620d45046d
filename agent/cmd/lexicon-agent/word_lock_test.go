package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/joblock"
	"github.com/lexicon-fleet/lexicon/agent/internal/state"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestWordRunTakesTheJobLock: `word run` takes the lock jobs and repairs take. While a job or repair
// holds it, the word is refused with agent.busy and does not run; once it is free the word runs, and
// gives the lock back when it ends.
func TestWordRunTakesTheJobLock(t *testing.T) {
	sd := t.TempDir()
	cache := filepath.Join(t.TempDir(), "cache")
	run := func() (int, string) {
		code, out, _ := runAgent(t, "word", "run", "--dev", "--module", "../../../build/wasm/examples/hello.wasm",
			"--manifest", "../../../examples/word-hello/manifest.json", "--params", `{"name": "author"}`,
			"--cache-dir", cache, "--state-dir", sd, "-o", "json")
		return code, out
	}
	held, err := joblock.TryAcquire(state.Dir(sd).LockFile())
	if err != nil {
		t.Fatal(err)
	}
	code, out := run()
	if code != 1 || !strings.Contains(out, `"code": "`+errcode.AgentBusy+`"`) || strings.Contains(out, "hello, author") {
		t.Fatalf("while the job lock is held: exit %d\n%s", code, out)
	}
	held.Release()

	if code, out := run(); code != 0 || !strings.Contains(out, "hello, author") {
		t.Fatalf("with the job lock free: exit %d\n%s", code, out)
	}
	again, err := joblock.TryAcquire(state.Dir(sd).LockFile())
	if err != nil {
		t.Fatalf("word run kept the job lock after it ended: %v", err)
	}
	again.Release()
}

// TestWordRunStateDirMissing: a state folder named but missing is refused, rather than the word run
// without the lock it asked for.
func TestWordRunStateDirMissing(t *testing.T) {
	code, out, _ := runAgent(t, "word", "run", "--dev", "--module", "../../../build/wasm/examples/hello.wasm",
		"--manifest", "../../../examples/word-hello/manifest.json", "--cache-dir", filepath.Join(t.TempDir(), "cache"),
		"--state-dir", filepath.Join(t.TempDir(), "missing"), "-o", "json")
	if code != 1 || !strings.Contains(out, `"code": "`+errcode.IOFailed+`"`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
