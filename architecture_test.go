package lexicon_test

// ARCHITECTURE.md is the repository's map. Two things in it are checked, because both drift unseen:
// its list of dependency fences must be exactly the fences fences_test.go enforces, and every place in
// the repository that cites one of its sections must name a section it has.

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const architectureDoc = "ARCHITECTURE.md"

// fencesSection is the heading of the section that lists the fences.
const fencesSection = "What each part may import"

// sectionBullets returns the top-level bullets of the section headed "## name", each with its
// continuation lines joined by single spaces.
func sectionBullets(doc, name string) ([]string, bool) {
	var bullets []string
	in, found := false, false
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			in = strings.TrimSpace(h) == name
			found = found || in
			continue
		}
		switch {
		case !in:
		case strings.HasPrefix(line, "- "):
			bullets = append(bullets, strings.TrimSpace(line[2:]))
		case strings.HasPrefix(line, "  ") && len(bullets) > 0 && strings.TrimSpace(line) != "":
			bullets[len(bullets)-1] += " " + strings.TrimSpace(line)
		}
	}
	return bullets, found
}

// fenceDocDiff names the fences the document does not state and the bullets it states that no fence
// enforces.
func fenceDocDiff(rules, bullets []string) []string {
	var out []string
	for _, r := range rules {
		if !slices.Contains(bullets, r) {
			out = append(out, "fences_test.go enforces a fence ARCHITECTURE.md does not list: "+r)
		}
	}
	for _, b := range bullets {
		if !slices.Contains(rules, b) {
			out = append(out, "ARCHITECTURE.md lists a fence no test enforces: "+b)
		}
	}
	return out
}

func TestFencesDocumented(t *testing.T) {
	doc, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	bullets, ok := sectionBullets(string(doc), fencesSection)
	if !ok {
		t.Fatalf("%s has no section %q", architectureDoc, fencesSection)
	}
	var rules []string
	for _, f := range fences {
		if f.rule == "" {
			t.Errorf("the fence over %s states no rule for %s", f.pattern, architectureDoc)
			continue
		}
		rules = append(rules, f.rule)
	}
	for _, d := range fenceDocDiff(rules, bullets) {
		t.Error(d)
	}
}

// TestFencesDocumentedCatchesDrift shows the comparison fails both ways: a fence the document leaves
// out, and a bullet no fence enforces.
func TestFencesDocumentedCatchesDrift(t *testing.T) {
	doc := "# x\n\n## " + fencesSection + "\n\nProse.\n\n- `a` never imports `b`,\n  nor `c`.\n- `d` imports nothing.\n\n## Next\n\n- not a fence\n"
	bullets, ok := sectionBullets(doc, fencesSection)
	if !ok || !slices.Equal(bullets, []string{"`a` never imports `b`, nor `c`.", "`d` imports nothing."}) {
		t.Fatalf("bullets %q (found %v)", bullets, ok)
	}
	if d := fenceDocDiff([]string{"`a` never imports `b`, nor `c`.", "`d` imports nothing."}, bullets); len(d) != 0 {
		t.Errorf("the same lines: %q", d)
	}
	if d := fenceDocDiff([]string{"`a` never imports `b`, nor `c`."}, bullets); len(d) != 1 || !strings.Contains(d[0], "no test enforces") {
		t.Errorf("a bullet no fence enforces: %q", d)
	}
	if d := fenceDocDiff([]string{"`a` never imports `b`, nor `c`.", "`d` imports nothing.", "`e` is fenced."}, bullets); len(d) != 1 || !strings.Contains(d[0], "does not list") {
		t.Errorf("a fence the document leaves out: %q", d)
	}
}

// citation matches the name of the doc, an optional comma or parenthesis, and a quoted section name,
// which may run over a comment's line break.
var citation = regexp.MustCompile(`ARCHITECTURE\.md,? \(?"([^"]+)"`)

// TestArchitectureCitations: every Go file and document in the repository that cites a section of
// ARCHITECTURE.md names one it has, so a renamed section cannot leave a dangling reference behind.
func TestArchitectureCitations(t *testing.T) {
	doc, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			sections[strings.TrimSpace(h)] = true
		}
	}
	cited := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "build" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range citation.FindAllStringSubmatch(string(data), -1) {
			cited++
			words := slices.DeleteFunc(strings.Fields(m[1]), func(w string) bool { return w == "//" })
			if name := strings.Join(words, " "); !sections[name] {
				t.Errorf("%s cites %s, %q: no such section", path, architectureDoc, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited == 0 {
		t.Fatal("no citation of ARCHITECTURE.md found: the pattern no longer matches how the repository cites it")
	}
}
