package registry_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestDiffReleases: a word removed, one added, a driver rebuilt, and three words whose contracts break
// in each way a contract can (a param removed, a param's type changed, an output field removed).
func TestDiffReleases(t *testing.T) {
	f := newFixture(t)
	f.modules = writeModules(t, 4, nil)
	oldDir := f.build(t, 1, nil)

	next := writeModules(t, 5, func(name, m string) string {
		bump := func(m string) string { return strings.Replace(m, `"version": "1.0.0"`, `"version": "1.1.0"`, 1) }
		switch name {
		case "word_001":
			return bump(strings.Replace(m, `, "top": {"type": "integer"}`, ``, 1))
		case "word_002":
			return bump(strings.Replace(m, `"top": {"type": "integer"}`, `"top": {"type": "string"}`, 1))
		case "word_003":
			return bump(strings.Replace(m, `, "truncated": {"type": "boolean"}`, ``, 1))
		}
		return m
	})
	must(t, os.RemoveAll(filepath.Join(next, "word_000")))
	must(t, os.WriteFile(filepath.Join(next, "driver-memory", "lexicon-driver-dns-memory"), []byte("\x7fELF driver, rebuilt"), 0o644))
	newDir := f.build(t, 2, func(o *registry.BuildOptions) { o.ModulesDir = next })

	d, err := registry.DiffReleases(oldDir, newDir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Old != (registry.ReleaseID{Release: "1.1.0", Sequence: 1}) || d.New != (registry.ReleaseID{Release: "1.2.0", Sequence: 2}) {
		t.Fatalf("releases %+v -> %+v", d.Old, d.New)
	}
	if want := []registry.DiffModule{{Kind: manifest.KindWord, Name: "word_004", Version: "1.0.0"}}; !reflect.DeepEqual(d.Added, want) {
		t.Fatalf("added %+v, want %+v", d.Added, want)
	}
	if want := []registry.DiffModule{{Kind: manifest.KindWord, Name: "word_000", Version: "1.0.0"}}; !reflect.DeepEqual(d.Removed, want) {
		t.Fatalf("removed %+v, want %+v", d.Removed, want)
	}
	changed := map[string]registry.DiffChange{}
	for _, c := range d.Changed {
		changed[c.Name] = c
	}
	wantChanged := map[string]registry.DiffChange{
		"memory":   {Kind: manifest.KindDriver, Name: "memory", FromVersion: "1.0.0", ToVersion: "1.0.0", ModuleChanged: true, ManifestChanged: true},
		"word_001": {Kind: manifest.KindWord, Name: "word_001", FromVersion: "1.0.0", ToVersion: "1.1.0", ManifestChanged: true},
		"word_002": {Kind: manifest.KindWord, Name: "word_002", FromVersion: "1.0.0", ToVersion: "1.1.0", ManifestChanged: true},
		"word_003": {Kind: manifest.KindWord, Name: "word_003", FromVersion: "1.0.0", ToVersion: "1.1.0", ManifestChanged: true},
	}
	if len(d.Changed) != len(wantChanged) || !reflect.DeepEqual(changed, wantChanged) {
		t.Fatalf("changed %+v, want %+v", d.Changed, wantChanged)
	}
	wantBroken := []manifest.Break{
		{Word: "word_001", Field: "params.top", Change: "removed"},
		{Word: "word_002", Field: "params.top", Change: "changed"},
		{Word: "word_003", Field: "output.truncated", Change: "removed"},
	}
	if !reflect.DeepEqual(d.Broken, wantBroken) {
		t.Fatalf("broken %+v, want %+v", d.Broken, wantBroken)
	}
	// The same releases the other way round: what was added is removed, and every break is read from
	// the new side's point of view.
	back, err := registry.DiffReleases(newDir, oldDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Added) != 1 || back.Added[0].Name != "word_000" || len(back.Removed) != 1 || back.Removed[0].Name != "word_004" {
		t.Fatalf("reversed diff %+v", back)
	}
}

func TestDiffReleasesUnchanged(t *testing.T) {
	f := newFixture(t)
	a, b := f.build(t, 1, nil), f.build(t, 2, nil)
	d, err := registry.DiffReleases(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Added)+len(d.Removed)+len(d.Changed)+len(d.Broken) != 0 || d.Added == nil || d.Broken == nil {
		t.Fatalf("diff of equal module sets %+v", d)
	}
}

func TestDiffReleasesRefusesWhatIsNotARelease(t *testing.T) {
	f := newFixture(t)
	good := f.build(t, 1, nil)
	if _, err := registry.DiffReleases(good, t.TempDir()); errcode.Code(err) != errcode.StatementMalformed ||
		!strings.Contains(err.Error(), "has no "+registry.BundleFile) {
		t.Fatalf("folder without a release: %v", err)
	}
	bad := copyRelease(t, good)
	must(t, os.WriteFile(filepath.Join(bad, registry.BundleFile), []byte(`{"mediaType": `), 0o644))
	if _, err := registry.DiffReleases(bad, good); errcode.Code(err) != errcode.StatementMalformed {
		t.Fatalf("malformed bundle: %v", err)
	}
}
