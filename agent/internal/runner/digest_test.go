package runner_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestAlteredModuleIsRefused: the runner hands the host the module's bytes from the store without
// hashing them itself (the host hashes them in each process that compiles them); bytes altered in the
// store after the vocabulary verified them are refused all the same, as module.digest_mismatch, and
// the same bytes put back load.
func TestAlteredModuleIsRefused(t *testing.T) {
	dir := t.TempDir()
	rel := vocabtest.Build(t, helloModule(t, dir))
	store := filepath.Join(dir, "modules")
	v, err := vocab.Open(rel.Trust, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Sync(t.Context(), rel, channel.StatementRef{}); err != nil {
		t.Fatal(err)
	}
	w, ok := v.Word("hello")
	if !ok {
		t.Fatal("no word hello in the vocabulary")
	}
	blob := filepath.Join(store, "sha256", w.Module)
	good, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	load := func() error {
		h, err := wasm.New(t.Context(), wasm.Config{Isolation: wasm.InProcess})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		_, err = (&runner.Runner{Host: h, Vocab: v}).Load(t.Context(), w)
		return err
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 0xff
	if err := os.WriteFile(blob, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := load(); !errcode.Has(err, errcode.ModuleDigestMismatch) {
		t.Fatalf("altered bytes: %v, want %s", err, errcode.ModuleDigestMismatch)
	}
	if err := os.WriteFile(blob, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := load(); err != nil {
		t.Fatalf("the pinned bytes: %v", err)
	}
}
