package main

import (
	"context"
	"flag"
	"time"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

// renewCmd re-signs the previous release with a new sequence and expiry: what thaws a fleet whose
// statement expired, without rebuilding a module or an agent.
func renewCmd() *cli.Command {
	var keyFile, previous, expires, out string
	var sequence uint64
	return &cli.Command{
		Path:    "renew",
		Args:    "--key KEY --previous RELEASE_DIR [--sequence N] [--expires DURATION] --out RELEASE_DIR",
		Summary: "sign the previous release again, same modules and agents, with a new sequence and expiry",
		MaxArgs: 0,
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&keyFile, "key", "", "publisher private key file (required)")
			fs.StringVar(&previous, "previous", "", "the release folder to renew (required)")
			fs.Uint64Var(&sequence, "sequence", 0, "statement sequence, above the previous one (default: the time in seconds)")
			fs.StringVar(&expires, "expires", "90d", "validity, e.g. 90d or 2160h")
			fs.StringVar(&out, "out", "", "release folder to write (required)")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if keyFile == "" || previous == "" || out == "" {
				return nil, cli.UsageError("renew needs --key, --previous and --out")
			}
			d, err := parseDuration(expires)
			if err != nil {
				return nil, err
			}
			key, err := keys.ReadPublisherPrivateFile(keyFile)
			if err != nil {
				return nil, err
			}
			if sequence == 0 {
				sequence = uint64(time.Now().Unix())
			}
			res, err := registry.Renew(registry.RenewOptions{Key: key, PreviousDir: previous, Sequence: sequence, Expires: d, OutDir: out})
			if err != nil {
				return nil, err
			}
			return buildResult{res}, nil
		},
	}
}
