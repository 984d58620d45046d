package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/state"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestReleaseInstall gives a node that never joined a plane its vocabulary from a release folder,
// verified with the node's own trust; a release the node cannot verify changes nothing.
func TestReleaseInstall(t *testing.T) {
	release, trust := signedRelease(t)
	config, stateDir := filepath.Dir(trust), t.TempDir()

	// Signed by a key the node does not hold: refused, and the node still has no vocabulary.
	rogue := filepath.Join(t.TempDir(), "rogue")
	if _, err := registry.Build(registry.BuildOptions{Key: keys.NewPublisher(), ModulesDir: helloModules(t), Release: "1.0.0",
		Sequence: 1, OutDir: rogue, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runAgent(t, "release", "install", rogue, "--state-dir", stateDir, "--config-dir", config, "-o", "json")
	var failed struct {
		OK   bool
		Code string
	}
	if err := json.Unmarshal([]byte(out), &failed); err != nil || code == 0 || failed.Code != errcode.StatementSignatureInvalid {
		t.Fatalf("rogue release: exit %d %s", code, out)
	}
	if words := vocabularyOf(t, trust, stateDir); len(words) != 0 {
		t.Fatalf("a refused release left words: %v", words)
	}

	code, out, errOut := runAgent(t, "release", "install", release, "--state-dir", stateDir, "--config-dir", config, "-o", "json")
	var res struct {
		OK         bool
		Statement  uint64 `json:"statement_sequence"`
		Vocabulary []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || !res.OK || res.Statement != 1 || len(res.Vocabulary) != 1 || res.Vocabulary[0].Name != "hello" {
		t.Fatalf("install: exit %d %s %s", code, out, errOut)
	}
	// What the daemon opens at start.
	if words := vocabularyOf(t, trust, stateDir); len(words) != 1 || words[0] != "hello" {
		t.Fatalf("vocabulary after install: %v", words)
	}
	if code, out, _ := runAgent(t, "release", "install", t.TempDir(), "--state-dir", stateDir, "--config-dir", config, "-o", "json"); code == 0 {
		t.Fatalf("a folder with no statement was installed: %s", out)
	}
}

func vocabularyOf(t *testing.T, trust, stateDir string) []string {
	t.Helper()
	sd, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vocab.Open(trust, sd.ModulesDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range v.Report() {
		names = append(names, w.Name)
	}
	return names
}
