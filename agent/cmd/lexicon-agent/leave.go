package main

import (
	"context"
	"fmt"
	"io"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type leaveResult struct{ channel.LeaveResponse }

func (r leaveResult) Text(w io.Writer) {
	fmt.Fprintf(w, "node %s has left; its key is retired and the next join makes a fresh one\n", r.NodeID)
}

func leaveCmd() *cli.Command {
	var d dirs
	return &cli.Command{
		Path: "leave", MaxArgs: 0, Summary: "end this machine's pairing with one signed goodbye",
		Setup: d.setup,
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			sd, _, c, err := d.paired()
			if err != nil {
				return nil, err
			}
			resp, err := c.Leave(ctx, "lexicon-agent leave")
			if err != nil {
				return nil, err
			}
			return leaveResult{resp}, sd.RetireKey()
		},
	}
}
