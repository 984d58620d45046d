package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/recipes"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type recipesResult struct {
	Recipes []recipes.Summary `json:"recipes"`
}

func (r recipesResult) Text(w io.Writer) {
	if len(r.Recipes) == 0 {
		fmt.Fprintln(w, "no recipe has run on this node yet")
	}
	for _, s := range r.Recipes {
		fmt.Fprintf(w, "%-20s %-8s %s", s.Name, or(s.LastVerdict, "-"), s.LastEvent.Event)
		if !s.LastEvent.At.IsZero() {
			fmt.Fprintf(w, " at %s", s.LastEvent.At.Local().Format(time.DateTime))
		}
		if s.Attempts > 0 {
			fmt.Fprintf(w, ", %d repair attempts this run", s.Attempts)
		}
		fmt.Fprintln(w)
		if s.Detail != "" {
			fmt.Fprintf(w, "  %s\n", s.Detail)
		}
		if s.Case != nil {
			fmt.Fprintf(w, "  case %d %s: %s\n", s.Case.ID, s.Case.State, s.Case.Summary)
		}
	}
}

type historyResult struct {
	Recipe string          `json:"recipe"`
	Events []recipes.Event `json:"events"`
}

func (r historyResult) Text(w io.Writer) {
	for _, ev := range r.Events {
		b, _ := json.Marshal(ev)
		fmt.Fprintln(w, string(b))
	}
}

func recipesCmd() *cli.Command {
	var d dirs
	return &cli.Command{
		Path: "recipes", Args: "[RECIPE]", MaxArgs: 1,
		Summary: "show what the recipes saw and did (from the state folder); with RECIPE, its whole ledger",
		Setup:   d.setup,
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			sd, err := d.open()
			if err != nil {
				return nil, err
			}
			if len(args) == 1 {
				if !manifest.ValidName(args[0]) {
					return nil, cli.UsageError("%q is not a recipe name", args[0])
				}
				events, err := recipes.History(sd.RecipesDir(), args[0])
				if err != nil {
					return nil, err
				}
				return historyResult{Recipe: args[0], Events: append([]recipes.Event{}, events...)}, nil
			}
			list, err := recipes.Inspect(sd.RecipesDir())
			if err != nil {
				return nil, err
			}
			return recipesResult{Recipes: list}, nil
		},
	}
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

var (
	_ cli.Texter = recipesResult{}
	_ cli.Texter = historyResult{}
)
