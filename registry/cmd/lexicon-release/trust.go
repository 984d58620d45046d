package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type trustResult struct {
	Dir                  string   `json:"dir"`
	StatementKeys        []string `json:"statement_keys"`
	LogKeys              []string `json:"log_keys"`
	TimestampAuthorities []string `json:"timestamp_authorities"`
}

func (r trustResult) Text(w io.Writer) {
	fmt.Fprintf(w, "wrote trust folder %s: %d statement keys, %d log keys, %d timestamp authorities, and trusted_root.json for standard Sigstore tools\n",
		r.Dir, len(r.StatementKeys), len(r.LogKeys), len(r.TimestampAuthorities))
}

func trustInitCmd() *cli.Command {
	var out string
	var pubs, logKeys, tsaChains multiFlag
	return &cli.Command{
		Path: "trust init", Args: "--out TRUST_DIR --key KEY.pub... [--log-key LOGKEY_FILE...] [--tsa-chain PEM_FILE...]", MaxArgs: 0,
		Summary: "make a trust folder that holds the given publisher keys and, optionally, log keys, with a standard trusted_root.json",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&out, "out", "", "trust folder to create (required)")
			fs.Var(&pubs, "key", "publisher public key file (repeatable, at least one)")
			fs.Var(&logKeys, "log-key", "file holding a log-key: line (repeatable)")
			fs.Var(&tsaChains, "tsa-chain", "PEM certificate chain of a timestamp authority, leaf first, for trusted_root.json (repeatable)")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if out == "" || len(pubs) == 0 {
				return nil, cli.UsageError("trust init needs --out and at least one --key")
			}
			r := trustResult{Dir: out, StatementKeys: []string{}, LogKeys: []string{}, TimestampAuthorities: []string{}}
			var held []keys.PublisherPublic
			for _, p := range pubs {
				k, err := readPublic(p)
				if err != nil {
					return nil, err
				}
				held = append(held, k)
				r.StatementKeys = append(r.StatementKeys, k.Fingerprint())
			}
			var logs []keys.LogPublic
			for _, p := range logKeys {
				data, err := os.ReadFile(p)
				if err != nil {
					return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", p)
				}
				for _, line := range keys.Lines(data) {
					lk, err := keys.ParseLogPublic(line)
					if err != nil {
						return nil, err
					}
					logs = append(logs, lk)
					r.LogKeys = append(r.LogKeys, lk.Origin())
				}
			}
			var tsas []registry.TimestampAuthority
			for _, p := range tsaChains {
				data, err := os.ReadFile(p)
				if err != nil {
					return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", p)
				}
				a, err := registry.ParseTimestampAuthority(data)
				if err != nil {
					return nil, err
				}
				tsas = append(tsas, a)
				r.TimestampAuthorities = append(r.TimestampAuthorities, a.Chain[0].Subject.CommonName)
			}
			if err := registry.InitTrust(out, held, logs, tsas...); err != nil {
				return nil, err
			}
			return r, nil
		},
	}
}
