package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"text/template"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// templates are the scaffolds `new` writes: templates/<kind>/<file>.tmpl becomes <dir>/<file>.
//
//go:embed templates
var templates embed.FS

// newKinds are the kinds `new` scaffolds; a driver is a DNS driver (a cloud driver's contract is
// larger than a starting point should be).
var newKinds = []string{"word", "recipe", "driver"}

type newResult struct {
	Kind  string   `json:"kind"`
	Name  string   `json:"name"`
	Dir   string   `json:"dir"`
	Files []string `json:"files"`
}

func (r newResult) Text(w io.Writer) {
	fmt.Fprintf(w, "wrote a %s %q in %s:\n", r.Kind, r.Name, r.Dir)
	for _, f := range r.Files {
		fmt.Fprintf(w, "  %s\n", f)
	}
	fmt.Fprintf(w, "test it with: (cd %s && go test .)\n", r.Dir)
}

// tmplData is what a template sees.
type tmplData struct {
	Name     string
	Env      string // the variable naming a prebuilt module for the test
	Platform string // the platform a driver's manifest names: this machine's
}

func newCmd() *cli.Command {
	var dir string
	return &cli.Command{
		Path: "new", Args: "word|recipe|driver NAME [--dir DIR]", MinArgs: 2, MaxArgs: 2,
		Summary: "scaffold a module folder: a manifest with a closed params schema, main.go and a test that passes",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&dir, "dir", "", "folder to create (default ./NAME); it must not exist or be empty")
		},
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			kind, name := args[0], args[1]
			if !contains(newKinds, kind) {
				return nil, cli.UsageError("new makes a word, a recipe or a driver, not %q", kind)
			}
			if !manifest.ValidName(name) {
				return nil, cli.UsageError("%q is not a module name: lower-case letters, digits and _, starting with a letter", name)
			}
			if dir == "" {
				dir = name
			}
			return scaffold(kind, name, dir)
		},
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scaffold renders every template of kind into dir, which must not exist or be empty: it never
// overwrites an author's file.
func scaffold(kind, name, dir string) (newResult, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return newResult{}, errcode.New(errcode.UsageInvalid, "%s exists and is not empty; new never overwrites files", dir).With(errcode.DetailField, "dir")
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return newResult{}, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", dir)
	}
	data := tmplData{Name: name, Env: "LEXICON_" + strings.ToUpper(name) + "_WASM", Platform: runtime.GOOS + "/" + runtime.GOARCH}
	root := path.Join("templates", kind)
	entries, err := templates.ReadDir(root)
	if err != nil {
		return newResult{}, errcode.Wrap(err, errcode.InternalError, "no templates for %s", kind)
	}
	files := map[string][]byte{}
	res := newResult{Kind: kind, Name: name, Dir: dir}
	for _, e := range entries {
		src, err := templates.ReadFile(path.Join(root, e.Name()))
		if err != nil {
			return newResult{}, errcode.Wrap(err, errcode.InternalError, "template %s", e.Name())
		}
		t, err := template.New(e.Name()).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return newResult{}, errcode.Wrap(err, errcode.InternalError, "template %s", e.Name())
		}
		var out bytes.Buffer
		if err := t.Execute(&out, data); err != nil {
			return newResult{}, errcode.Wrap(err, errcode.InternalError, "template %s", e.Name())
		}
		file := strings.TrimSuffix(e.Name(), ".tmpl")
		files[file] = out.Bytes()
		res.Files = append(res.Files, file)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return newResult{}, errcode.Wrap(err, errcode.IOFailed, "cannot create %s", dir)
	}
	for _, file := range res.Files {
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, files[file], 0o644); err != nil {
			return newResult{}, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", p)
		}
	}
	return res, nil
}
