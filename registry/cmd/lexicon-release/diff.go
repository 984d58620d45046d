package main

import (
	"context"
	"fmt"
	"io"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type diffResult struct{ *registry.Diff }

func (r diffResult) Text(w io.Writer) {
	fmt.Fprintf(w, "%s (sequence %d) -> %s (sequence %d)\n", r.Old.Release, r.Old.Sequence, r.New.Release, r.New.Sequence)
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
		fmt.Fprintf(w, "! contract broken: %s\n", b)
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

func diffCmd() *cli.Command {
	return &cli.Command{
		Path: "diff", Args: "OLD_RELEASE_DIR NEW_RELEASE_DIR", MinArgs: 2, MaxArgs: 2,
		Summary: "list added, removed and changed modules, and any broken word contract",
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			d, err := registry.DiffReleases(args[0], args[1])
			if err != nil {
				return nil, err
			}
			return diffResult{d}, nil
		},
	}
}
