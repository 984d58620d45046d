package lexicon_test

// Error codes are declared once, in sdk/errcode, with their status and meaning. A code spelled as a
// string literal anywhere else drifts from that table unseen (a typo is a new code no caller branches
// on), so this test reads every non-test Go file of the module and refuses a literal that is exactly
// area.reason for an area the table knows. A word's own codes (restart_unit.failed) are in areas the
// table does not know, and pass.

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

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

var codeShaped = regexp.MustCompile(`^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$`)

// codeLiterals returns "file:line: literal" for every code-shaped literal of a known area in the Go
// files under root, test files, testdata and sdk/errcode left out.
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
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules" || name == "build") {
				return filepath.SkipDir
			}
			if filepath.ToSlash(rel) == "sdk/errcode" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
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
				if isCode(s) {
					pos := fset.Position(n.Pos())
					file, _ := filepath.Rel(root, pos.Filename)
					found = append(found, file+":"+strconv.Itoa(pos.Line)+": "+n.Value)
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

// isCode reports whether s reads as a Lexicon code: a declared one, or one of a known area with a reason
// the table uses in some area (job.invalid, a code nobody declared). Only the area is not enough:
// file names (plane.db, policy.json), driver operations (dns.list_zones) and manifest field paths
// (recipe.scope) share the shape and areas' names without being codes.
func isCode(s string) bool {
	if _, ok := errcode.Lookup(s); ok {
		return true
	}
	area, reason, _ := strings.Cut(s, ".")
	return errcode.KnownArea(area) && knownReasons[reason]
}

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
		t.Errorf("%s is an error code spelled as a literal; use its sdk/errcode constant", hit)
	}
}

// TestCodeLiteralsCanFail runs the check on a file that spells a code, so a check that finds nothing
// because it reads nothing does not pass unseen.
func TestCodeLiteralsCanFail(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nvar a, b, c = \"job.not_found\", \"restart_unit.failed\", \"plane.db\"\n\nconst d = \"store.invalid\"\n\ntype T struct {\n\tX int `json:\"job.x\"`\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := codeLiterals(t, dir)
	if len(got) != 2 || !strings.Contains(got[0], `"job.not_found"`) || !strings.Contains(got[1], `"store.invalid"`) {
		t.Fatalf("found %q, want job.not_found and store.invalid", got)
	}
}
