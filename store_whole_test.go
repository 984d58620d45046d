package lexicon_test

// Each room of the plane declares the store interface of the methods it uses, where it uses it; only
// the store itself, the wiring that assembles the rooms over one store (plane/internal/wire) and the
// plane's command that opens it (plane/cmd/lexicon-plane) hold store.Store as a whole. A room that took
// all of it could reach every table, and a reader could not tell from its type what it touches.

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

const storePkg = module + "/plane/store"

// holdsWholeStore may name store.Store: the store and its suite, the wiring, the serve command.
var holdsWholeStore = []string{"plane/store", "plane/internal/wire", "plane/cmd/lexicon-plane"}

// wholeStoreUses returns "file:line" for every non-test Go file under root outside the allowed folders
// that names store.Store.
func wholeStoreUses(t *testing.T, root string, allowed []string) []string {
	t.Helper()
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && notOurs(name) {
				return filepath.SkipDir
			}
			for _, a := range allowed {
				if rel == a {
					return filepath.SkipDir
				}
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
		name := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == storePkg {
				name = "store"
				if imp.Name != nil {
					name = imp.Name.Name
				}
			}
		}
		if name == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Store" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == name {
				found = append(found, rel+":"+strconv.Itoa(fset.Position(sel.Pos()).Line))
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

func TestOnlyTheWiringHoldsTheWholeStore(t *testing.T) {
	for _, hit := range wholeStoreUses(t, ".", holdsWholeStore) {
		t.Errorf("%s names store.Store; declare the interface of the methods it uses where it uses them", hit)
	}
}

// TestWholeStoreCheckCanFail runs the check on a room that takes the whole store, under another name
// too, so a check that reads nothing does not pass unseen.
func TestWholeStoreCheckCanFail(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"room/room.go": "package room\n\nimport \"" + storePkg + "\"\n\ntype Config struct {\n\tStore store.Store\n}\n\ntype Narrow interface {\n\tJobGet() store.Job\n}\n",
		"other/o.go":   "package other\n\nimport st \"" + storePkg + "\"\n\nvar _ st.Store\n",
		"wire/wire.go": "package wire\n\nimport \"" + storePkg + "\"\n\nvar _ store.Store\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := wholeStoreUses(t, dir, []string{"wire"})
	if len(got) != 2 || got[0] != "other/o.go:5" || got[1] != "room/room.go:6" {
		t.Fatalf("found %q, want other/o.go:5 and room/room.go:6", got)
	}
}
