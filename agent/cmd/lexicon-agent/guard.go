package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/lexicon-fleet/lexicon/agent"
	"github.com/lexicon-fleet/lexicon/agent/internal/update"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type guardResult struct {
	RolledBack bool `json:"rolled_back"`
}

func (r guardResult) Text(w io.Writer) {
	if r.RolledBack {
		fmt.Fprintln(w, "the agent on trial was rolled back to its fallback")
	}
}

// guardCmd is the unit's ExecStartPre, run by the known-good binary in the state folder: before every
// start, a version on trial whose previous start never ended its trial, or that cannot answer version
// at all, is replaced by the known-good binary, so the start that follows runs a binary this machine
// has seen run. It exits 0 either way: a failing ExecStartPre would keep the fallback from starting.
func guardCmd() *cli.Command {
	var d dirs
	var uf updateFlags
	return &cli.Command{
		Path: "guard", MaxArgs: 0,
		Summary: "before a start (the unit's ExecStartPre): roll back an agent on trial that died or cannot answer version",
		Setup: func(fs *flag.FlagSet) {
			d.setup(fs)
			uf.setup(fs)
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if agent.TestFault == "nostart" {
				os.Exit(2) // a test build whose guard cannot run
			}
			sd, err := d.open()
			if err != nil {
				return nil, err
			}
			log := slog.New(slog.NewJSONHandler(env.Stderr, nil)).With(errcode.DetailPart, "guard")
			up, err := uf.updater(sd, log, nil)
			if err != nil {
				return nil, err
			}
			err = up.Guard(ctx)
			if errors.Is(err, update.ErrRolledBack) {
				return guardResult{RolledBack: true}, nil
			}
			return guardResult{}, err
		},
	}
}
