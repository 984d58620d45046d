package main

import (
	"archive/tar"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type releaseOne struct{ api.Release }

func (r releaseOne) Text(w io.Writer) {
	fmt.Fprintf(w, "published release %s (sequence %d), %d artifacts, statement %s\n", r.Version, r.Sequence, len(r.Artifacts), r.StatementDigest)
	for _, c := range r.Checks {
		fmt.Fprintf(w, "  %-18s passed  %s\n", c.Check, c.Message)
	}
	if r.Rollout != "" {
		fmt.Fprintf(w, "rollout %s takes every node to it (lexicon rollouts show %s --wait)\n", r.Rollout, r.Rollout)
	} else {
		fmt.Fprintf(w, "offered: nodes reach it through a rollout (lexicon rollouts start --release %d)\n", r.Sequence)
	}
}

// releasesPublishCmd streams a release folder to the plane as a tar of statement.bundle.json and
// sha256/<hex>; the plane verifies it with its own trust folder before storing anything.
func releasesPublishCmd() *cli.Command {
	var deployAll bool
	return simple("releases publish", "RELEASE_DIR [--deploy-all]", "upload a release; the plane verifies it before storing it and offers it", 1, 1,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&deployAll, "deploy-all", false, "also start a rollout taking every node to it")
		},
		func(ctx context.Context, env *cli.Env, c *client, args []string) (any, error) {
			dir := args[0]
			store0, err := cas.Open(dir)
			if err != nil {
				return nil, err
			}
			blobs, err := store0.List()
			if err != nil {
				return nil, err
			}
			if _, err := os.Stat(filepath.Join(dir, api.ReleaseBundleFile)); err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "%s is not a release folder: no %s", dir, api.ReleaseBundleFile)
			}
			pr, pw := io.Pipe()
			go func() {
				pw.CloseWithError(writeTar(pw, dir, blobs, env))
			}()
			var r releaseOne
			path := api.ReleasesPublish.Pattern
			if deployAll {
				path += "?deploy_all=true"
			}
			err = c.do(ctx, api.ReleasesPublish.Method, path, pr, "application/x-tar", &r)
			pr.Close()
			return r, err
		})
}

func writeTar(w io.Writer, dir string, blobs []string, env *cli.Env) error {
	tw := tar.NewWriter(w)
	files := append([]string{api.ReleaseBundleFile}, prefixed(blobs)...)
	for i, name := range files {
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: fi.Size(), Typeflag: tar.TypeReg})
		}
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		f.Close()
		if err != nil {
			return err
		}
		env.Progressf("[%d/%d] %s (%d bytes)", i+1, len(files), name, fi.Size())
	}
	return tw.Close()
}

func prefixed(blobs []string) []string {
	out := make([]string, len(blobs))
	for i, b := range blobs {
		out[i] = "sha256/" + b
	}
	return out
}

type releaseList struct{ api.ReleaseList }

func (l releaseList) Text(w io.Writer) {
	if len(l.Releases) == 0 {
		fmt.Fprintln(w, "no releases")
	}
	for _, r := range l.Releases {
		fmt.Fprintf(w, "%-6d %-10s %s  published %s by %s, expires %s\n", r.Sequence, r.Version, r.StatementDigest[:16], short(r.PublishedAt), r.PublishedBy,
			short(r.ExpiresAt))
	}
}

func releasesListCmd() *cli.Command {
	return simple("releases list", "", "list published releases, newest first", 0, 0, nil,
		func(ctx context.Context, _ *cli.Env, c *client, _ []string) (any, error) {
			var l releaseList
			return l, c.call(ctx, api.ReleasesList, nil, nil, nil, &l)
		})
}

type releaseShow struct{ api.ReleaseDetail }

func (r releaseShow) Text(w io.Writer) {
	fmt.Fprintf(w, "release %s (sequence %d), statement %s, published %s by %s, expires %s\n", r.Version, r.Sequence, r.StatementDigest,
		short(r.PublishedAt), r.PublishedBy, short(r.ExpiresAt))
	for _, m := range r.Modules {
		fmt.Fprintf(w, "%-7s %-24s %-10s %-11s module %s\n", m.Kind, m.Name, m.Version, m.Class, m.Module)
	}
	for _, a := range r.Agents {
		fmt.Fprintf(w, "agent   %-24s %s\n", a.Platform, a.SHA256)
	}
}

func releasesShowCmd() *cli.Command {
	return simple("releases show", "SEQUENCE", "show a published release's words, recipes, drivers and agents", 1, 1, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var r releaseShow
			return r, c.call(ctx, api.ReleasesShow, args, nil, nil, &r)
		})
}

type releaseDiff struct{ api.ReleaseDiff }

// Text prints the diff as lexicon-release diff prints one of two folders.
func (r releaseDiff) Text(w io.Writer) {
	fmt.Fprintf(w, "%s (sequence %d) -> %s (sequence %d)\n", r.From.Version, r.From.Sequence, r.To.Version, r.To.Sequence)
	for _, m := range r.Added {
		fmt.Fprintf(w, "+ %s %s@%s\n", m.Kind, m.Name, m.Version)
	}
	for _, m := range r.Removed {
		fmt.Fprintf(w, "- %s %s@%s\n", m.Kind, m.Name, m.Version)
	}
	for _, c := range r.Changed {
		fmt.Fprintf(w, "~ %s %s %s -> %s (module changed: %t, manifest changed: %t)\n", c.Kind, c.Name, c.FromVersion, c.ToVersion, c.ModuleChanged, c.ManifestChanged)
	}
	for _, b := range r.Broken {
		fmt.Fprintf(w, "! contract broken: %s: %s %s\n", b.Word, b.Field, b.Change)
	}
	for _, a := range r.Agents {
		switch {
		case a.From == "":
			fmt.Fprintf(w, "+ agent %s %s\n", a.Platform, a.To)
		case a.To == "":
			fmt.Fprintf(w, "- agent %s %s\n", a.Platform, a.From)
		default:
			fmt.Fprintf(w, "~ agent %s %s -> %s\n", a.Platform, a.From, a.To)
		}
	}
	if len(r.Added)+len(r.Removed)+len(r.Changed) == 0 {
		fmt.Fprintln(w, "no module changed")
	}
}

func releasesDiffCmd() *cli.Command {
	return simple("releases diff", "FROM_SEQUENCE TO_SEQUENCE", "list what changed between two published releases, and any broken word contract", 2, 2, nil,
		func(ctx context.Context, _ *cli.Env, c *client, args []string) (any, error) {
			var d releaseDiff
			return d, c.call(ctx, api.ReleasesDiff, args, nil, nil, &d)
		})
}
