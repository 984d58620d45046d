package openapi

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// source is what plane/api's Go source says that reflection cannot: the doc comments of its types,
// fields and routes, the values of its string enums, and each route's variable name, which becomes
// its operationId.
type source struct {
	typeDocs  map[string]string            // type name -> doc
	fieldDocs map[string]map[string]string // type name -> Go field name -> doc
	enums     map[string][]string          // string type name -> its constants' values, in source order
	routes    map[string]routeSource       // "METHOD /pattern" -> its variable
	// aliasOf names, by its package path and name, a type of another package that plane/api declares
	// an alias of (type JobState = channel.JobState): the document calls it by plane/api's name, and its
	// enum is read from its own package's constants.
	aliasOf map[string]string
}

type routeSource struct {
	name, doc string
}

// readSource parses the non-test Go files of plane/api in dir.
func readSource(dir string) (*source, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse plane/api: %w", err)
		}
		if f.Name.Name != "api" {
			return nil, fmt.Errorf("%s is package %s, not plane/api", name, f.Name.Name)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go files of plane/api in %s", dir)
	}
	src := &source{typeDocs: map[string]string{}, fieldDocs: map[string]map[string]string{}, enums: map[string][]string{},
		routes: map[string]routeSource{}, aliasOf: map[string]string{}}
	var aliases []alias
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					src.addType(g, s)
					if a, ok := aliasIn(f, s); ok {
						aliases = append(aliases, a)
					}
				case *ast.ValueSpec:
					if g.Tok == token.CONST {
						src.addConst(s)
					} else {
						src.addRoute(g, s)
					}
				}
			}
		}
	}
	for _, a := range aliases {
		if err := src.addAlias(dir, a); err != nil {
			return nil, err
		}
	}
	return src, nil
}

// alias is plane/api's type name of another package's type.
type alias struct {
	name, pkgPath, typ string
}

// aliasIn reads an alias of another package's type (type X = pkg.Y) and the import path of pkg.
func aliasIn(f *ast.File, s *ast.TypeSpec) (alias, bool) {
	sel, ok := s.Type.(*ast.SelectorExpr)
	if !s.Assign.IsValid() || !ok {
		return alias{}, false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return alias{}, false
	}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == pkg.Name {
			return alias{name: s.Name.Name, pkgPath: path, typ: sel.Sel.Name}, true
		}
	}
	return alias{}, false
}

// addAlias reads the string constants of an aliased type from its package's source, which is in this
// module (plane/api links nothing else that a client would see), found from go.mod above dir.
func (src *source) addAlias(dir string, a alias) error {
	root, module, err := moduleOf(dir)
	if err != nil {
		return err
	}
	rel, ok := strings.CutPrefix(a.pkgPath, module+"/")
	if !ok {
		return fmt.Errorf("plane/api's %s aliases %s.%s, which is outside module %s", a.name, a.pkgPath, a.typ, module)
	}
	names, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(rel), "*.go"))
	if err != nil {
		return err
	}
	other := &source{enums: map[string][]string{}}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return fmt.Errorf("parse %s: %w", a.pkgPath, err)
		}
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, spec := range g.Specs {
					other.addConst(spec.(*ast.ValueSpec))
				}
			}
		}
	}
	src.aliasOf[a.pkgPath+"."+a.typ] = a.name
	src.enums[a.name] = other.enums[a.typ]
	return nil
}

// moduleOf finds the module holding dir: its root folder and its path.
func moduleOf(dir string) (root, module string, err error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			if m := modfile.ModulePath(data); m != "" {
				return d, m, nil
			}
			return "", "", fmt.Errorf("%s has no module line", filepath.Join(d, "go.mod"))
		}
		up := filepath.Dir(d)
		if up == d {
			return "", "", fmt.Errorf("no go.mod above %s", dir)
		}
		d = up
	}
}

func (src *source) addType(g *ast.GenDecl, s *ast.TypeSpec) {
	doc := s.Doc
	if doc == nil && len(g.Specs) == 1 {
		doc = g.Doc
	}
	src.typeDocs[s.Name.Name] = text(doc)
	st, ok := s.Type.(*ast.StructType)
	if !ok {
		return
	}
	fields := map[string]string{}
	for _, f := range st.Fields.List {
		d := text(f.Doc)
		if c := text(f.Comment); c != "" {
			d = strings.TrimSpace(d + " " + c)
		}
		for _, n := range f.Names {
			fields[n.Name] = d
		}
	}
	src.fieldDocs[s.Name.Name] = fields
}

// addConst records a typed string constant as a value of its type's enum.
func (src *source) addConst(s *ast.ValueSpec) {
	typ, ok := s.Type.(*ast.Ident)
	if !ok {
		return
	}
	for _, v := range s.Values {
		lit, ok := v.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			continue
		}
		value, err := strconv.Unquote(lit.Value)
		if err == nil {
			src.enums[typ.Name] = append(src.enums[typ.Name], value)
		}
	}
}

// addRoute records a variable holding a Route literal under its method and pattern.
func (src *source) addRoute(g *ast.GenDecl, s *ast.ValueSpec) {
	if len(s.Names) != 1 || len(s.Values) != 1 {
		return
	}
	lit, ok := s.Values[0].(*ast.CompositeLit)
	if typ, isIdent := lit.Type.(*ast.Ident); !ok || !isIdent || typ.Name != "Route" {
		return
	}
	var method, pattern string
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		switch {
		case key == nil:
		case key.Name == "Method":
			if sel, ok := kv.Value.(*ast.SelectorExpr); ok {
				method = strings.ToUpper(strings.TrimPrefix(sel.Sel.Name, "Method"))
			}
		case key.Name == "Pattern":
			if b, ok := kv.Value.(*ast.BasicLit); ok {
				pattern, _ = strconv.Unquote(b.Value)
			}
		}
	}
	if method == "" || pattern == "" {
		return
	}
	doc := s.Doc
	if doc == nil && len(g.Specs) == 1 {
		doc = g.Doc
	}
	src.routes[method+" "+pattern] = routeSource{name: s.Names[0].Name, doc: text(doc)}
}

// text is a comment as one paragraph per blank-line-separated block.
func text(c *ast.CommentGroup) string {
	if c == nil {
		return ""
	}
	var paras []string
	for _, p := range strings.Split(strings.TrimSpace(c.Text()), "\n\n") {
		paras = append(paras, strings.Join(strings.Fields(p), " "))
	}
	return strings.Join(paras, "\n\n")
}
