package lexicon_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// logMethods are log/slog's logging calls, on a Logger or the package: an "error" among their
// arguments is an attribute key, and the repository's one spelling of that key is "err".
var logMethods = map[string]bool{
	"Debug": true, "Info": true, "Warn": true, "Error": true, "Log": true, "With": true,
	"DebugContext": true, "InfoContext": true, "WarnContext": true, "ErrorContext": true,
}

// errorKeys returns "file:line" for every log call under root (tests, testdata and build/ left out)
// that passes the literal "error".
func errorKeys(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && notOurs(name) {
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
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !logMethods[sel.Sel.Name] {
				return true
			}
			for _, a := range call.Args {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && s == "error" {
						pos := fset.Position(lit.Pos())
						file, _ := filepath.Rel(root, pos.Filename)
						found = append(found, file+":"+strconv.Itoa(pos.Line))
					}
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

// TestLogErrorKeyIsErr: every structured log line names its error "err", so one query finds every
// logged error whichever part of the fleet logged it.
func TestLogErrorKeyIsErr(t *testing.T) {
	for _, hit := range errorKeys(t, ".") {
		t.Errorf(`%s: a log call's error key is "error"; the repository spells it "err"`, hit)
	}
}

// TestLogErrorKeyCanFail runs the check on a file that breaks it, so a check that reads nothing does not
// pass unseen.
func TestLogErrorKeyCanFail(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nimport \"log/slog\"\n\nfunc f(err error) {\n\tslog.Warn(\"x\", \"error\", err)\n\tslog.Warn(\"x\", \"err\", err)\n\tslog.Default().With(\"error\", err)\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := errorKeys(t, dir); len(got) != 2 || !strings.HasSuffix(got[0], ":6") || !strings.HasSuffix(got[1], ":8") {
		t.Fatalf(`found %q, want lines 6 and 8`, got)
	}
}
