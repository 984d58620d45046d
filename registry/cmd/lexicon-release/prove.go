package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/registry/tlog"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type proveResult struct {
	Release string     `json:"release"`
	File    string     `json:"file"`
	Proofs  []proofRef `json:"proofs"`
}

type proofRef struct {
	Origin  string `json:"origin"`
	OldSize uint64 `json:"old_size"`
	NewSize uint64 `json:"new_size"`
	From    string `json:"from"` // the earlier release folder whose checkpoint it starts or ends at
}

func (r proveResult) Text(w io.Writer) {
	fmt.Fprintf(w, "wrote %d consistency proofs to %s\n", len(r.Proofs), r.File)
	for _, p := range r.Proofs {
		fmt.Fprintf(w, "  %s %d..%d (from %s)\n", p.Origin, p.OldSize, p.NewSize, p.From)
	}
}

// proveCmd fetches from the log the consistency proofs between earlier releases' checkpoints and this
// release's, checks each, and writes them beside the statement, for nodes that install from a folder
// and so have no plane to fetch proofs from. A log that cannot prove one is a log showing more than one
// history, and the command fails with statement.log_inconsistent.
func proveCmd() *cli.Command {
	var rekor, logKeyFile string
	var previous multiFlag
	var timeout time.Duration
	return &cli.Command{
		Path: "prove", Args: "--rekor URL --log-key LOGKEY_FILE --previous DIR... RELEASE_DIR", MinArgs: 1, MaxArgs: 1,
		Summary: "write the log's consistency proofs from earlier releases' checkpoints to this release's (log_proofs.json)",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&rekor, "rekor", "", "base URL of the Rekor v2 log the release is logged in (required)")
			fs.StringVar(&logKeyFile, "log-key", "", "file holding the log's log-key: line (required)")
			fs.Var(&previous, "previous", "an earlier release folder whose checkpoint nodes may hold (repeatable, at least one)")
			fs.DurationVar(&timeout, "timeout", time.Minute, "time allowed for the log to answer")
		},
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			if rekor == "" || logKeyFile == "" || len(previous) == 0 {
				return nil, cli.UsageError("prove needs --rekor, --log-key and at least one --previous")
			}
			data, err := os.ReadFile(logKeyFile)
			if err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", logKeyFile)
			}
			lk, err := keys.ParseLogPublic(string(data))
			if err != nil {
				return nil, err
			}
			this, err := releaseCheckpoint(args[0], lk)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			reader := &tlog.Reader{URL: rekor, Log: lk}
			out := filepath.Join(args[0], registry.LogProofsFile)
			res := proveResult{Release: args[0], File: out, Proofs: []proofRef{}}
			proofs := []checkpoint.Proof{}
			for _, dir := range previous {
				was, err := releaseCheckpoint(dir, lk)
				if err != nil {
					return nil, err
				}
				older, newer := was, this
				if was.Size > this.Size {
					older, newer = this, was
				}
				if older.Size == newer.Size {
					if _, err := (checkpoint.Held{was.Origin: was}).Check(this, nil); err != nil {
						return nil, err
					}
					continue
				}
				env.Progressf("proving %s %d..%d", lk.Origin(), older.Size, newer.Size)
				p, err := reader.Prove(ctx, older.Size, newer.Size)
				if err != nil {
					return nil, err
				}
				if _, err := (checkpoint.Held{was.Origin: was}).Check(this, []checkpoint.Proof{p}); err != nil {
					return nil, fmt.Errorf("%s: %w", dir, err)
				}
				proofs = append(proofs, p)
				res.Proofs = append(res.Proofs, proofRef{Origin: p.Origin, OldSize: p.OldSize, NewSize: p.NewSize, From: dir})
			}
			if len(proofs) > checkpoint.MaxProofs {
				return nil, cli.UsageError("at most %d proofs fit in one release folder; name fewer --previous", checkpoint.MaxProofs)
			}
			body, _ := json.MarshalIndent(proofs, "", "  ")
			if err := keys.ReplaceFile(out, append(body, '\n'), 0o644); err != nil {
				return nil, err
			}
			return res, nil
		},
	}
}

// releaseCheckpoint is the checkpoint of log lk that the release in dir is logged under.
func releaseCheckpoint(dir string, lk keys.LogPublic) (checkpoint.Checkpoint, error) {
	path := filepath.Join(dir, registry.BundleFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return checkpoint.Checkpoint{}, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	b, err := statement.ParseBundle(data)
	if err != nil {
		return checkpoint.Checkpoint{}, err
	}
	for _, e := range b.GetVerificationMaterial().GetTlogEntries() {
		if string(e.GetLogId().GetKeyId()) == string(lk.ID()) {
			return checkpoint.Open([]byte(e.GetInclusionProof().GetCheckpoint().GetEnvelope()), lk)
		}
	}
	return checkpoint.Checkpoint{}, errcode.New(errcode.StatementUnlogged, "%s is not logged in %s (lexicon-release log adds the entry)", dir, lk.Origin())
}
