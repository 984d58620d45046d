package errcode_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

var codeShape = regexp.MustCompile(`^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$`)

// declared parses this package's source and returns every string constant with the file it is in.
func declared(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	consts := map[string]string{} // value -> file
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING || !id.IsExported() {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					if prev, dup := consts[v]; dup {
						t.Errorf("%s is declared twice (%s and %s)", v, prev, name)
					}
					consts[v] = name
				}
			}
		}
	}
	return consts
}

func TestEveryCodeIsShapedAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range errcode.Areas() {
		if !codeShape.MatchString(a.Name + ".x") {
			t.Errorf("area %q is not snake case", a.Name)
		}
		for _, s := range a.Codes {
			if !codeShape.MatchString(s.Code) {
				t.Errorf("%q is not area.reason in snake case", s.Code)
			}
			if area, _, _ := strings.Cut(s.Code, "."); area != a.Name {
				t.Errorf("%s is listed in area %s", s.Code, a.Name)
			}
			if seen[s.Code] {
				t.Errorf("%s is in the table twice", s.Code)
			}
			seen[s.Code] = true
			if s.Status < 400 || s.Status > 599 {
				t.Errorf("%s has status %d, not an error status", s.Code, s.Status)
			}
			if s.Change.String() == "unknown" {
				t.Errorf("%s does not say whether anything changed", s.Code)
			}
		}
	}
	if len(seen) != len(errcode.All()) {
		t.Errorf("All has %d codes, the areas %d", len(errcode.All()), len(seen))
	}
}

// TestEveryConstantIsInTheTable keeps the constants and the table one list: a code declared without its
// spec, a spec without its constant, or a constant outside its area's file fails here.
func TestEveryConstantIsInTheTable(t *testing.T) {
	consts := declared(t)
	for code, file := range consts {
		isCodesFile := strings.HasPrefix(file, "codes_")
		if !strings.Contains(code, ".") && !isCodesFile {
			continue // a detail key or another name, not a code
		}
		if !codeShape.MatchString(code) {
			t.Errorf("constant %q in %s is not area.reason in snake case", code, file)
			continue
		}
		if _, ok := errcode.Lookup(code); !ok {
			t.Errorf("%s (%s) is not in the table", code, file)
		}
		area, _, _ := strings.Cut(code, ".")
		if want := "codes_" + area + ".go"; file != want {
			t.Errorf("%s is declared in %s, not %s", code, file, want)
		}
	}
	for _, s := range errcode.All() {
		if _, ok := consts[s.Code]; !ok {
			t.Errorf("%s is in the table but declared by no constant", s.Code)
		}
	}
}

func TestLookupStatusAndReserved(t *testing.T) {
	if s, ok := errcode.Lookup(errcode.JobNotFound); !ok || s.Status != 404 || s.Change != errcode.Unchanged {
		t.Errorf("Lookup(job.not_found) = %+v, %v", s, ok)
	}
	if s, ok := errcode.Lookup(errcode.DriverCrashed); !ok || s.Status != 502 || s.Change != errcode.MaybeChanged {
		t.Errorf("Lookup(driver.crashed) = %+v, %v", s, ok)
	}
	if _, ok := errcode.Lookup("restart_unit.failed"); ok {
		t.Error("a word's own code is in the table")
	}
	if got := errcode.Status("restart_unit.failed"); got != 500 {
		t.Errorf("Status of an undeclared code = %d, want 500", got)
	}
	if got := errcode.Status(errcode.RequestTooLarge); got != 413 {
		t.Errorf("Status(request.too_large) = %d", got)
	}
	for _, area := range []string{"store", "plane", "agent", "driver", "internal", "word", "job", "node"} {
		if !errcode.ReservedArea(area) {
			t.Errorf("area %s is not reserved", area)
		}
	}
	for _, area := range []string{"capability", "recipe", "restart_unit", "disk_usage", ""} {
		if errcode.ReservedArea(area) {
			t.Errorf("area %q is reserved", area)
		}
	}
	if !errcode.Reserved(errcode.StoreBusy) || errcode.Reserved(errcode.CapabilityDenied) || errcode.Reserved("disk_usage.root_missing") {
		t.Error("Reserved disagrees with ReservedArea")
	}
	if !errcode.KnownArea("capability") || errcode.KnownArea("disk_usage") {
		t.Error("KnownArea")
	}
}
