package main

import (
	"context"
	"fmt"
	"io"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type installResult struct {
	Statement  uint64         `json:"statement_sequence"`
	Digest     string         `json:"statement_digest"`
	Untrusted  string         `json:"untrusted,omitempty"`
	Vocabulary []channel.Word `json:"vocabulary"`
	Recipes    []string       `json:"recipes"`
}

func (r installResult) Text(w io.Writer) {
	fmt.Fprintf(w, "statement sequence %d installed: %d words, %d recipes\n", r.Statement, len(r.Vocabulary), len(r.Recipes))
	if r.Untrusted != "" {
		fmt.Fprintf(w, "refused: %s\n", r.Untrusted)
	}
	fmt.Fprintln(w, "a running agent loads it when it restarts")
}

// releaseInstallCmd gives a node a vocabulary without a plane: the recipe loop runs on every agent,
// paired or not, and a machine that never joined has no other way to get a verified statement.
func releaseInstallCmd() *cli.Command {
	var d dirs
	return &cli.Command{
		Path: "release install", Args: "RELEASE_DIR", MinArgs: 1, MaxArgs: 1,
		Summary: "verify a release folder with this node's trust and make it the node's vocabulary (for a node without a plane)",
		Setup:   d.setup,
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			_, v, err := d.vocabulary()
			if err != nil {
				return nil, err
			}
			if err := v.Sync(ctx, vocab.Dir(args[0]), channel.StatementRef{}); err != nil {
				return nil, err
			}
			ref := v.Ref()
			res := installResult{Statement: ref.Sequence, Digest: ref.Digest, Untrusted: v.Untrusted(), Vocabulary: v.Report(), Recipes: []string{}}
			for _, r := range v.Recipes() {
				res.Recipes = append(res.Recipes, r.Manifest.Name)
			}
			return res, nil
		},
	}
}
