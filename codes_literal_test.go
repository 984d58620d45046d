package lexicon_test

// Error codes are declared once, in sdk/errcode, with their status and meaning. A code spelled as a
// string literal anywhere else drifts from that table unseen (a typo is a new code no caller branches
// on), so this test reads every non-test Go file of the module and refuses a literal that is exactly
// area.reason for an area the table knows. A word's own codes (restart_unit.failed) are in areas the
// table does not know, and pass. The operations of the driver audit log have the same shape and some of
// the same areas but are not codes: they are declared once too, in their own table
// (plane/store/operations.go), and a literal in an operation's area is refused unless it is a declared
// code spelled through its constant, so an operation cannot be spelled inline either.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// operationsTable is the one file that spells audit operations.
const operationsTable = "plane/store/operations.go"

var codeShaped = regexp.MustCompile(`^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$`)

// codeLiterals returns "file:line: literal (what)" for every code-shaped literal of a known area in
// the Go files under root, test files, testdata, sdk/errcode and the operations table left out.
func codeLiterals(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && notOurs(name) {
				return filepath.SkipDir
			}
			if filepath.ToSlash(rel) == "sdk/errcode" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.ToSlash(rel) == operationsTable {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		tags := map[*ast.BasicLit]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if n.Tag != nil {
					tags[n.Tag] = true
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING || tags[n] {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil || !codeShaped.MatchString(s) {
					return true
				}
				if what := classify(s); what != "" {
					pos := fset.Position(n.Pos())
					file, _ := filepath.Rel(root, pos.Filename)
					found = append(found, file+":"+strconv.Itoa(pos.Line)+": "+n.Value+" ("+what+")")
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// classify says what a code-shaped literal s is when it may not be spelled outside its table: an error
// code (a declared one, or one of a known area with a reason the table uses in some area: job.invalid,
// a code nobody declared), an audit operation (a declared one), or a literal in an operation's area that
// is neither (an operation nobody declared); "" when it is none of them. File names (plane.db,
// policy.json) and manifest field paths (recipe.scope) share the shape and areas' names without being
// codes, and pass.
func classify(s string) string {
	if _, ok := errcode.Lookup(s); ok {
		return "an error code: use its sdk/errcode constant"
	}
	if store.KnownOperation(s) {
		return "an audit operation: use its constant in " + operationsTable
	}
	// A capability's name (account.read) may share an operation's area (account.create) without being
	// either.
	if manifest.KnownCapability(s) {
		return ""
	}
	area, reason, _ := strings.Cut(s, ".")
	if operationAreas[area] {
		return "in an audit operation's area but declared in neither table: declare it in " + operationsTable
	}
	if errcode.KnownArea(area) && knownReasons[reason] {
		return "an error code nobody declared: declare it in sdk/errcode"
	}
	return ""
}

var operationAreas = func() map[string]bool {
	m := map[string]bool{}
	for _, op := range store.Operations() {
		area, _, _ := strings.Cut(op, ".")
		m[area] = true
	}
	return m
}()

var knownReasons = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range errcode.All() {
		_, reason, _ := strings.Cut(s.Code, ".")
		m[reason] = true
	}
	return m
}()

func TestNoCodeLiteralsOutsideErrcode(t *testing.T) {
	for _, hit := range codeLiterals(t, ".") {
		t.Errorf("%s is spelled as a literal", hit)
	}
}

// TestCodeLiteralsCanFail runs the check on a file that spells a code and operations, so a check that
// finds nothing because it reads nothing does not pass unseen.
func TestCodeLiteralsCanFail(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nvar a, b, c = \"job.not_found\", \"restart_unit.failed\", \"plane.db\"\n\nconst d = \"store.invalid\"\n\n" +
		"var e, f = \"cloud.regions\", \"dns.frobnicate\"\n\ntype T struct {\n\tX int `json:\"job.x\"`\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := codeLiterals(t, dir)
	want := []string{`"job.not_found" (an error code`, `"store.invalid" (an error code nobody declared`, `"cloud.regions" (an audit operation`,
		`"dns.frobnicate" (in an audit operation's area`}
	if len(got) != len(want) {
		t.Fatalf("found %q, want %q", got, want)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Fatalf("found %q, want %q", got, want)
		}
	}
}
