package vocab_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
)

const root = "../../../"

func mods() []vocabtest.Module {
	return []vocabtest.Module{
		{Manifest: root + "primitives/restart_unit/manifest.json", File: root + "build/wasm/restart_unit.wasm"},
		{Manifest: root + "primitives/recipes/unit_health/manifest.json", File: root + "build/wasm/recipes/unit_health.wasm"},
		{Manifest: root + "primitives/recipes/disk_headroom/manifest.json", File: root + "build/wasm/recipes/disk_headroom.wasm"},
	}
}

// TestRecipesVerifiedLikeWords: the statement's recipes load beside its words, each module re-hashed
// against its pin; a claim's vocabulary still lists only words.
func TestRecipesVerifiedLikeWords(t *testing.T) {
	v := vocabtest.Build(t, mods()...).Open(t)
	var names []string
	for _, r := range v.Recipes() {
		if r.Manifest.Kind != manifest.KindRecipe {
			t.Fatalf("%s is a %s", r.Manifest.Name, r.Manifest.Kind)
		}
		if _, err := v.Module(r); err != nil {
			t.Fatalf("%s: %v", r.Manifest.Name, err)
		}
		names = append(names, r.Manifest.Name)
	}
	if strings.Join(names, ",") != "disk_headroom,unit_health" {
		t.Fatalf("recipes %v", names)
	}
	if rep := v.Report(); len(rep) != 1 || rep[0].Name != "restart_unit" {
		t.Fatalf("vocabulary %+v", rep)
	}
	if _, ok := v.Word("unit_health"); ok {
		t.Fatal("a recipe is runnable as a word")
	}
	if v.Untrusted() != "" {
		t.Fatal(v.Untrusted())
	}
}

// TestTamperedRecipeLeftOut: a recipe whose bytes do not match their pin is not loaded, and the node
// says why.
func TestTamperedRecipeLeftOut(t *testing.T) {
	rel := vocabtest.Build(t, mods()...)
	data, err := os.ReadFile(root + "build/wasm/recipes/unit_health.wasm")
	if err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(rel.Dir, "sha256", cas.Sum(data))
	data[len(data)-1] ^= 1
	if err := os.WriteFile(blob, data, 0o644); err != nil {
		t.Fatal(err)
	}
	v := rel.Open(t)
	if got := v.Recipes(); len(got) != 1 || got[0].Manifest.Name != "disk_headroom" {
		t.Fatalf("recipes %v", got)
	}
	if !strings.Contains(v.Untrusted(), "unit_health: module.digest_mismatch") {
		t.Fatalf("untrusted %q", v.Untrusted())
	}
}
