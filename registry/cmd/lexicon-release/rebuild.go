package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/cmd/lexicon-release/internal/datamerge"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Rebuild statuses, one per module.
const (
	rebuildMatch          = "match"
	rebuildMismatch       = "mismatch"
	rebuildNotRebuildable = "not_rebuildable"
)

// rebuiltModule is one module of a release, rebuilt from source and compared.
type rebuiltModule struct {
	Kind    manifest.Kind `json:"kind"`
	Name    string        `json:"name"`
	Version string        `json:"version"`
	Status  string        `json:"status"`           // match, mismatch, not_rebuildable
	Folder  string        `json:"folder,omitempty"` // the source folder, relative to the tree
	Want    string        `json:"want"`             // the digest the release pins
	Got     string        `json:"got,omitempty"`    // the digest of the rebuilt module
	Code    string        `json:"code,omitempty"`   // why it is not a match
	Message string        `json:"message,omitempty"`
}

type rebuildResult struct {
	Release        string          `json:"release"`
	Sequence       uint64          `json:"sequence"`
	Source         string          `json:"source"`
	Modules        []rebuiltModule `json:"modules"`
	Matched        int             `json:"matched"`
	Mismatched     int             `json:"mismatched"`
	NotRebuildable int             `json:"not_rebuildable"`
}

func (r rebuildResult) Text(w io.Writer) {
	for _, m := range r.Modules {
		switch m.Status {
		case rebuildMatch:
			fmt.Fprintf(w, "match            %s %s@%s from %s\n", m.Kind, m.Name, m.Version, m.Folder)
		case rebuildMismatch:
			fmt.Fprintf(w, "MISMATCH         %s %s@%s from %s: release pins %s, source builds %s\n", m.Kind, m.Name, m.Version, m.Folder, m.Want, m.Got)
		default:
			fmt.Fprintf(w, "not rebuildable  %s %s@%s: %s (%s)\n", m.Kind, m.Name, m.Version, m.Message, m.Code)
		}
	}
	fmt.Fprintf(w, "release %s (sequence %d): %d match, %d mismatch, %d not rebuildable\n", r.Release, r.Sequence, r.Matched, r.Mismatched, r.NotRebuildable)
}

// ExitStatus fails the command on a mismatch, and on a source folder that does not build: either way
// the release's bytes are not shown to come from this tree. A module with no source folder is only
// reported, so a release carrying an outside author's module can still be checked for the rest.
func (r rebuildResult) ExitStatus() int {
	for _, m := range r.Modules {
		if m.Status == rebuildMismatch || m.Code == errcode.RebuildFailed {
			return 1
		}
	}
	return 0
}

func rebuildCheckCmd() *cli.Command {
	var (
		releaseDir, source string
		maps               multiFlag
	)
	return &cli.Command{
		Path:    "rebuild-check",
		Args:    "--release RELEASE_DIR --source TREE [--map NAME=DIR]...",
		Summary: "rebuild every module of a release from its source tree and compare digests with the release",
		MaxArgs: 0,
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&releaseDir, "release", "", "release folder, as build --out writes it (required)")
			fs.StringVar(&source, "source", "", "the source tree the release was built from: the repository's root (required)")
			fs.Var(&maps, "map", "source folder of a module, NAME=DIR relative to the tree, where it is not "+
				"primitives/NAME, primitives/recipes/NAME or plugins/CLASS/NAME (repeatable)")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if releaseDir == "" || source == "" {
				return nil, cli.UsageError("rebuild-check needs --release and --source")
			}
			folders := map[string]string{}
			for _, m := range maps {
				name, dir, ok := strings.Cut(m, "=")
				clean := filepath.Clean(dir)
				if !ok || name == "" || dir == "" || filepath.IsAbs(dir) || clean == ".." || strings.HasPrefix(clean, "../") {
					return nil, cli.UsageError("--map takes NAME=DIR with DIR inside the tree, not %q", m)
				}
				folders[name] = clean
			}
			return rebuildCheck(ctx, env, releaseDir, source, folders)
		},
	}
}

func rebuildCheck(ctx context.Context, env *cli.Env, releaseDir, tree string, folders map[string]string) (rebuildResult, error) {
	raw, err := os.ReadFile(filepath.Join(releaseDir, registry.BundleFile))
	if err != nil {
		return rebuildResult{}, errcode.Wrap(err, errcode.IOFailed, "cannot read the release in %s", releaseDir)
	}
	st, err := statement.DecodeBundle(raw)
	if err != nil {
		return rebuildResult{}, err
	}
	blobs, err := cas.Open(releaseDir)
	if err != nil {
		return rebuildResult{}, err
	}
	if fi, err := os.Stat(tree); err != nil || !fi.IsDir() {
		return rebuildResult{}, errcode.New(errcode.IOFailed, "source tree %s is not a folder", tree)
	}
	res := rebuildResult{Release: st.Predicate.Release, Sequence: st.Predicate.Sequence, Source: tree, Modules: []rebuiltModule{}}
	work, err := os.MkdirTemp("", "lexicon-rebuild-")
	if err != nil {
		return rebuildResult{}, errcode.Wrap(err, errcode.IOFailed, "cannot make a build folder")
	}
	defer os.RemoveAll(work)
	for i, row := range st.Predicate.Modules {
		out := rebuiltModule{Kind: row.Kind, Name: row.Name, Version: row.Version, Want: row.Module}
		mraw, err := blobs.Get(row.Manifest)
		if err != nil {
			return rebuildResult{}, err
		}
		m, err := manifest.Parse(mraw)
		if err != nil {
			return rebuildResult{}, fmt.Errorf("manifest of %s: %w", row.Name, err)
		}
		out.Folder = folders[row.Name]
		if out.Folder == "" {
			out.Folder = sourceFolder(m)
		}
		env.Progressf("[%d/%d] %s %s from %s", i+1, len(st.Predicate.Modules), row.Kind, row.Name, out.Folder)
		data, err := buildModule(ctx, tree, out.Folder, m, filepath.Join(work, fmt.Sprint(i)))
		switch {
		case err != nil:
			e := errcode.From(err, errcode.RebuildFailed)
			out.Status, out.Code, out.Message = rebuildNotRebuildable, e.Code, e.Message
			res.NotRebuildable++
		case cas.Sum(data) == row.Module:
			out.Status, out.Got = rebuildMatch, row.Module
			res.Matched++
		default:
			out.Status, out.Got, out.Code = rebuildMismatch, cas.Sum(data), errcode.RebuildMismatch
			out.Message = "the module built from source differs from the one the release pins"
			res.Mismatched++
		}
		res.Modules = append(res.Modules, out)
	}
	return res, nil
}

// sourceFolder is where a module's main package lives in the repository, by the layout the Makefile
// builds from.
func sourceFolder(m *manifest.Manifest) string {
	switch m.Kind {
	case manifest.KindRecipe:
		return filepath.Join("primitives", "recipes", m.Name)
	case manifest.KindDriver:
		return filepath.Join("plugins", string(m.Class), m.Name)
	}
	return filepath.Join("primitives", m.Name)
}

// buildModule builds the module in folder (relative to tree) exactly as the Makefile does: a word or
// recipe with GOOS=wasip1 GOARCH=wasm, -trimpath and no VCS stamp, then wasmpost's data merge; a driver
// for its manifest's platform with the same flags. out is a scratch path.
func buildModule(ctx context.Context, tree, folder string, m *manifest.Manifest, out string) ([]byte, error) {
	fi, err := os.Stat(filepath.Join(tree, folder))
	if err != nil || !fi.IsDir() {
		return nil, errcode.New(errcode.RebuildNoSource, "no source folder %s in %s", folder, tree).With(errcode.DetailModule, m.Name)
	}
	goos, goarch := "wasip1", "wasm"
	if m.Kind == manifest.KindDriver {
		goos, goarch, _ = strings.Cut(m.Platforms[0], "/") // a driver's manifest names exactly one platform
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-o", out, "./"+filepath.ToSlash(folder))
	cmd.Dir = tree
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, errcode.Wrap(err, errcode.RebuildFailed, "go build ./%s: %s", folder, strings.TrimSpace(string(msg))).With(errcode.DetailModule, m.Name)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read the built %s", out)
	}
	if m.Kind == manifest.KindDriver {
		return data, nil
	}
	merged, _, err := datamerge.Merge(data)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.RebuildFailed, "wasmpost %s", folder).With(errcode.DetailModule, m.Name)
	}
	return merged, nil
}
