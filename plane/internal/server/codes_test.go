package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestPlaneCodesAreDeclared reads the plane's source and checks that every error it makes
// (errcode.New, Wrap, From) names its code by an sdk/errcode constant that the codes table holds, so
// every code the plane can answer with has a declared status. Codes a driver reports pass through the
// plane as the driver spelled them; one the table does not hold answers 500 (TestStatusOfCodes).
func TestPlaneCodesAreDeclared(t *testing.T) {
	consts := errcodeConstants(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !isErrcode(fn.X) {
				return true
			}
			arg := map[string]int{"New": 0, "Wrap": 1, "From": 1}
			i, ok := arg[fn.Sel.Name]
			if !ok || len(call.Args) <= i {
				return true
			}
			pos := fset.Position(call.Pos())
			sel, ok := call.Args[i].(*ast.SelectorExpr)
			if !ok || !isErrcode(sel.X) {
				t.Errorf("%s: the code is not an sdk/errcode constant", pos)
				return true
			}
			code, ok := consts[sel.Sel.Name]
			if _, declared := errcode.Lookup(code); !ok || !declared {
				t.Errorf("%s: errcode.%s is not in the codes table", pos, sel.Sel.Name)
			}
			checked++
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d places that make an error; is the walk reading the plane?", checked)
	}
}

func isErrcode(x ast.Expr) bool {
	id, ok := x.(*ast.Ident)
	return ok && id.Name == "errcode"
}

// errcodeConstants maps each string constant of sdk/errcode to its value.
func errcodeConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("../../../sdk/errcode/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("sdk/errcode not found: %v", err)
	}
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
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
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							out[id.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	return out
}
