package runner_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestJobMustAgreeWithTheWordsManifest: two words share one module, `look` and `destructive`, on a node
// whose policy accepts destructive words. A job for destructive that the plane authorised as a look
// word is refused before anything is loaded, and so is one naming another module; the job as its own
// manifest describes it gets past the check (and on to the host, which these bytes do not satisfy).
func TestJobMustAgreeWithTheWordsManifest(t *testing.T) {
	dir := t.TempDir()
	module := filepath.Join(dir, "twins.wasm")
	if err := os.WriteFile(module, []byte("\x00asm\x01\x00\x00\x00twins"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mods []vocabtest.Module
	for _, w := range []struct{ name, class string }{{"look", "look"}, {"destructive", "destructive"}} {
		path := filepath.Join(dir, w.name+".json")
		mf := fmt.Sprintf(`{"schema":"lexicon/manifest/v1","name":%q,"kind":"word","version":"1.0.0","class":%q,"summary":"test",`+
			`"params":{"type":"object","additionalProperties":false},"output":{"type":"object"},"module":{"file":"twins.wasm"}}`, w.name, w.class)
		if err := os.WriteFile(path, []byte(mf), 0o644); err != nil {
			t.Fatal(err)
		}
		mods = append(mods, vocabtest.Module{Manifest: path, File: module})
	}
	v := vocabtest.Build(t, mods...).Open(t)
	look, _ := v.Word("look")
	destructive, ok := v.Word("destructive")
	if !ok || look.Module != destructive.Module {
		t.Fatalf("the twins do not share a module: %+v %+v", look, destructive)
	}
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"classes":{"look":"accept","change":"accept","destructive":"accept"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	host, err := wasm.New(t.Context(), wasm.Config{Isolation: wasm.InProcess})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	r := &runner.Runner{Host: host, Vocab: v, PolicyFile: policy, LockFile: filepath.Join(dir, "job.lock")}

	for _, tc := range []struct {
		name string
		job  channel.Job
		code string
	}{
		{"destructive authorised as look", channel.Job{ID: "j1", Word: "destructive", Digest: look.Module, Class: "look"}, errcode.JobWordMismatch},
		{"look authorised as destructive", channel.Job{ID: "j2", Word: "look", Digest: look.Module, Class: "destructive"}, errcode.JobWordMismatch},
		{"another module", channel.Job{ID: "j3", Word: "destructive", Digest: "00" + look.Module[2:], Class: "destructive"}, errcode.WordVersionMismatch},
		{"as its manifest says", channel.Job{ID: "j4", Word: "destructive", Digest: look.Module, Class: "destructive"}, errcode.WordModuleInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Run(t.Context(), tc.job)
			if res.Code != tc.code {
				t.Fatalf("%s: %s %s %q, want %s", tc.name, res.Outcome, res.Code, res.Message, tc.code)
			}
		})
	}
}
