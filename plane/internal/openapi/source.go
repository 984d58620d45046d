package openapi

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
)

// source is what plane/api's Go source says that reflection cannot: the doc comments of its types,
// fields and routes, the values of its string enums, and each route's variable name, which becomes
// its operationId.
type source struct {
	typeDocs  map[string]string            // type name -> doc
	fieldDocs map[string]map[string]string // type name -> Go field name -> doc
	enums     map[string][]string          // string type name -> its constants' values, in source order
	routes    map[string]routeSource       // "METHOD /pattern" -> its variable
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
		routes: map[string]routeSource{}}
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
	return src, nil
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
