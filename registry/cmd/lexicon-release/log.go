package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/registry/tlog"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type logResult struct {
	Rekor    string `json:"rekor"`
	TSA      string `json:"tsa,omitempty"`
	LogIndex int64  `json:"log_index"`
	TreeSize int64  `json:"tree_size"`
	Bundle   string `json:"bundle"`
}

func (r logResult) Text(w io.Writer) {
	fmt.Fprintf(w, "logged at index %d of %d in %s\nupdated %s\n", r.LogIndex, r.TreeSize, r.Rekor, r.Bundle)
}

func logCmd() *cli.Command {
	var rekor, tsa string
	var timeout time.Duration
	return &cli.Command{
		Path: "log", Args: "--rekor URL [--tsa URL] RELEASE_DIR", MinArgs: 1, MaxArgs: 1,
		Summary: "add the statement's transparency-log entry (Rekor v2 API), and a signed timestamp, to its bundle",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&rekor, "rekor", "", "base URL of a Rekor v2 log (required)")
			fs.StringVar(&tsa, "tsa", "", "URL of an RFC 3161 timestamp authority to timestamp the signature (Sigstore's .../api/v1/timestamp)")
			fs.DurationVar(&timeout, "timeout", 30*time.Second, "time allowed for the log to answer")
		},
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			if rekor == "" {
				return nil, cli.UsageError("log needs --rekor URL")
			}
			path := filepath.Join(args[0], registry.BundleFile)
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
			}
			b, err := statement.ParseBundle(data)
			if err != nil {
				return nil, err
			}
			st, err := statement.Decode(b.GetDsseEnvelope().Payload)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if tsa != "" {
				env.Progressf("timestamping the signature at %s", tsa)
				if err := tlog.Timestamp(ctx, tsa, b); err != nil {
					return nil, err
				}
			}
			env.Progressf("submitting sequence %d to %s", st.Predicate.Sequence, rekor)
			if err := tlog.Add(ctx, rekor, b, st.Predicate.Publisher); err != nil {
				return nil, err
			}
			out, err := statement.MarshalBundle(b)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(path+".tmp", out, 0o644); err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", path)
			}
			if err := os.Rename(path+".tmp", path); err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", path)
			}
			entries := b.VerificationMaterial.TlogEntries
			e := entries[len(entries)-1]
			return logResult{Rekor: rekor, TSA: tsa, LogIndex: e.LogIndex, TreeSize: e.GetInclusionProof().GetTreeSize(), Bundle: path}, nil
		},
	}
}
