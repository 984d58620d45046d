package lexicon_test

// ARCHITECTURE.md is the repository's map. Three things in it are checked, because all drift unseen:
// its list of dependency fences must be exactly the fences fences_test.go enforces, its table of the
// plane's rooms must be exactly what each imports, and every place in the repository that cites one of
// its sections must name a section it has.

import (
	"fmt"
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
			if path != "." && notOurs(d.Name()) {
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

// roomsSection is the heading of the section that tables the plane's packages.
const roomsSection = "The rooms of the plane"

// roomRows returns the table of the rooms section: each package under plane/internal it names (the
// first cell) with the packages under plane/internal its last cell says it imports.
func roomRows(doc string) (map[string][]string, error) {
	rows := map[string][]string{}
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			in = strings.TrimSpace(h) == roomsSection
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 {
			return nil, fmt.Errorf("a row of %d cells, want 3: %s", len(cells), line)
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if _, dup := rows[name]; dup {
			return nil, fmt.Errorf("%s has two rows", name)
		}
		imports := []string{}
		for _, f := range strings.Split(cells[2], ",") {
			if f = strings.Trim(strings.TrimSpace(f), "`"); f != "" {
				imports = append(imports, f)
			}
		}
		slices.Sort(imports)
		rows[name] = imports
	}
	return rows, nil
}

// roomDocDiff compares the table with what go list says each package under plane/internal imports,
// and holds every other in-module import to plane/api, plane/store, registry and sdk (host for drivers
// alone).
func roomDocDiff(rows map[string][]string, deps map[string][]string) []string {
	const prefix = module + "/plane/internal/"
	var out []string
	for pkg, list := range deps {
		name, ok := strings.CutPrefix(pkg, prefix)
		if !ok {
			continue
		}
		var room []string
		for _, dep := range list {
			if r, ok := strings.CutPrefix(dep, prefix); ok {
				room = append(room, r)
				continue
			}
			switch {
			case !strings.HasPrefix(dep, module+"/"), inModule(dep, "plane/api"), inModule(dep, "plane/store") && !inModule(dep, "plane/store/open"),
				inModule(dep, "registry"), inModule(dep, "sdk"), name == "drivers" && inModule(dep, "host/goplugin"),
				name == "backups" && (inModule(dep, "backup") || inModule(dep, "backup/presign")) && !inModule(dep, "backup/backuptest"):
			default:
				out = append(out, fmt.Sprintf("plane/internal/%s imports %s, which ARCHITECTURE.md lets no room import", name, dep))
			}
		}
		slices.Sort(room)
		documented, ok := rows[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("plane/internal/%s has no row in ARCHITECTURE.md, %q", name, roomsSection))
		case !slices.Equal(documented, room):
			out = append(out, fmt.Sprintf("plane/internal/%s imports %q of plane/internal; ARCHITECTURE.md says %q", name, room, documented))
		}
	}
	for name := range rows {
		if _, ok := deps[prefix+name]; !ok {
			out = append(out, fmt.Sprintf("ARCHITECTURE.md has a row for plane/internal/%s, which is no package", name))
		}
	}
	slices.Sort(out)
	return out
}

// TestRoomsDocumented: the table of the plane's rooms is the import graph among them, exactly.
func TestRoomsDocumented(t *testing.T) {
	doc, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := roomRows(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	deps, err := fenceDeps(fence{pattern: "plane/internal", direct: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range roomDocDiff(rows, deps) {
		t.Error(d)
	}
}

// TestRoomsDocumentedCatchesDrift shows the comparison fails on an edge the table leaves out, an edge
// it states that the code lacks, a package without a row, a row without a package, and an import no
// room may have.
func TestRoomsDocumentedCatchesDrift(t *testing.T) {
	doc := "## " + roomsSection + "\n\n| package | what | imports |\n|---|---|---|\n| `a` | x | `b` |\n| `b` | y | |\n\n## Next\n\n| `c` | z | `a` |\n"
	rows, err := roomRows(doc)
	if err != nil || len(rows) != 2 || !slices.Equal(rows["a"], []string{"b"}) || len(rows["b"]) != 0 {
		t.Fatalf("rows %q (%v)", rows, err)
	}
	p := module + "/plane/internal/"
	same := map[string][]string{p + "a": {p + "b", "fmt", module + "/plane/store"}, p + "b": {module + "/sdk/errcode"}}
	if d := roomDocDiff(rows, same); len(d) != 0 {
		t.Errorf("the same graph: %q", d)
	}
	for name, deps := range map[string]map[string][]string{
		"an edge left out":    {p + "a": {p + "b"}, p + "b": {p + "a"}},
		"an edge not in code": {p + "a": {}, p + "b": {}},
		"a package, no row":   {p + "a": {p + "b"}, p + "b": {}, p + "c": {}},
		"a row, no package":   {p + "a": {p + "b"}},
		"a forbidden import":  {p + "a": {p + "b", module + "/agent/policy"}, p + "b": {}},
	} {
		if d := roomDocDiff(rows, deps); len(d) != 1 {
			t.Errorf("%s: %q, want one difference", name, d)
		}
	}
}
