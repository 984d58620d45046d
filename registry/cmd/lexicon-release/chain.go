package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type chainResult struct {
	Entry statement.ChainEntry `json:"entry"`
	File  string               `json:"file"`
}

func (r chainResult) Text(w io.Writer) { fmt.Fprintf(w, "appended to %s: %s\n", r.File, r.Entry) }

// chainCmd makes "chain add" or "chain retire": a key-chain entry signed by a held key, appended to a
// file that `build --chain` reads.
func chainCmd(op string) *cli.Command {
	var keyFile, target, out string
	var from uint64
	summary := map[string]string{
		"add":    "sign a key-chain entry that adds a publisher key from a sequence on",
		"retire": "sign a key-chain entry that retires a publisher key from a sequence on",
	}[op]
	return &cli.Command{
		Path: "chain " + op, Args: "--key SIGNER.key --target KEY.pub --from N --out CHAIN_FILE", Summary: summary, MaxArgs: 0,
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&keyFile, "key", "", "private key of a publisher the nodes already hold (required)")
			fs.StringVar(&target, "target", "", "public key file of the key to "+op+" (required)")
			fs.Uint64Var(&from, "from", 0, "first statement sequence the entry applies to (required)")
			fs.StringVar(&out, "out", "", "chain file to append to (required)")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if keyFile == "" || target == "" || from == 0 || out == "" {
				return nil, cli.UsageError("chain %s needs --key, --target, --from and --out", op)
			}
			signer, err := keys.ReadPublisherPrivateFile(keyFile)
			if err != nil {
				return nil, err
			}
			pub, err := readPublic(target)
			if err != nil {
				return nil, err
			}
			e := statement.SignChainEntry(statement.ChainEntry{Op: op, Key: pub, FromSequence: from}, signer)
			line, _ := json.Marshal(e)
			if err := keys.AppendLines(out, []string{string(line)}); err != nil {
				return nil, err
			}
			return chainResult{Entry: e, File: out}, nil
		},
	}
}
