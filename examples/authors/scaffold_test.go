package authors_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScaffolds runs `lexicon-release new` for each kind in a fresh module and proves that what it
// writes builds and passes its own test as generated.
func TestScaffolds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and three scaffolds from a fresh folder")
	}
	bins := bin(t)
	release := filepath.Join(bins, "lexicon-release")
	f := newFresh(t)
	for _, kind := range []string{"word", "recipe", "driver"} {
		f.run(nil, release, "new", kind, "my_"+kind, "--dir", kind)
	}
	f.assertNoInternal()
	path := []string{"PATH=" + bins + string(os.PathListSeparator) + os.Getenv("PATH")} // the tests merge with wasmpost
	f.run(nil, "go", "vet", "./...")
	f.run([]string{"GOOS=wasip1", "GOARCH=wasm"}, "go", "build", "-o", os.DevNull, "./word")
	f.run([]string{"GOOS=wasip1", "GOARCH=wasm"}, "go", "build", "-o", os.DevNull, "./recipe")
	f.run(nil, "go", "build", "-o", f.path("lexicon-driver-dns-my_driver"), "./driver")
	out := f.run(path, "go", "test", "-count=1", "-v", "./...")
	for _, name := range []string{"TestUpper", "TestRefusals", "TestCheck", "TestConformance", "TestManifest"} {
		if !strings.Contains(out, "--- PASS: "+name) {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}
