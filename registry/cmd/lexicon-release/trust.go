package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type trustResult struct {
	Dir                  string         `json:"dir"`
	StatementKeys        []string       `json:"statement_keys"`
	LogKeys              []string       `json:"log_keys"`
	TimestampAuthorities []string       `json:"timestamp_authorities"`
	Witnesses            *witnessResult `json:"witnesses,omitempty"`
}

func (r trustResult) Text(w io.Writer) {
	fmt.Fprintf(w, "wrote trust folder %s: %d statement keys, %d log keys, %d timestamp authorities, and trusted_root.json for standard Sigstore tools\n",
		r.Dir, len(r.StatementKeys), len(r.LogKeys), len(r.TimestampAuthorities))
	if r.Witnesses != nil {
		r.Witnesses.Text(w)
	}
}

func trustInitCmd() *cli.Command {
	var out string
	var pubs, logKeys, tsaChains, witnesses multiFlag
	var quorum int
	return &cli.Command{
		Path: "trust init", Args: "--out TRUST_DIR --key KEY.pub... [--log-key LOGKEY_FILE...] [--tsa-chain PEM_FILE...] [--witness VKEY... --witness-quorum K]", MaxArgs: 0,
		Summary: "make a trust folder that holds the given publisher keys and, optionally, log keys and a witness policy, with a standard trusted_root.json",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&out, "out", "", "trust folder to create (required)")
			fs.Var(&pubs, "key", "publisher public key file (repeatable, at least one)")
			fs.Var(&logKeys, "log-key", "file holding a log-key: line (repeatable)")
			fs.Var(&tsaChains, "tsa-chain", "PEM certificate chain of a timestamp authority, leaf first, for trusted_root.json (repeatable)")
			fs.Var(&witnesses, "witness", "a witness's key: its C2SP vkey, or a witness-key: line (repeatable; needs --log-key)")
			fs.IntVar(&quorum, "witness-quorum", 0, "how many of the --witness keys must cosign each log checkpoint (default: all)")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if out == "" || len(pubs) == 0 {
				return nil, cli.UsageError("trust init needs --out and at least one --key")
			}
			if (len(witnesses) > 0 || quorum != 0) && len(logKeys) == 0 {
				return nil, cli.UsageError("witnesses cosign log checkpoints: --witness needs --log-key")
			}
			policy, err := witnessPolicy(witnesses, quorum)
			if err != nil {
				return nil, err
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
			if policy != nil {
				if err := registry.SetWitnessPolicy(out, policy); err != nil {
					return nil, err
				}
				r.Witnesses = newWitnessResult(out, policy)
			}
			return r, nil
		},
	}
}

type witnessResult struct {
	Dir       string   `json:"dir"`
	Quorum    int      `json:"quorum"`
	Witnesses []string `json:"witnesses"`
}

func newWitnessResult(dir string, p *checkpoint.Policy) *witnessResult {
	r := &witnessResult{Dir: dir, Witnesses: []string{}}
	if p != nil {
		r.Quorum = p.Quorum
		for _, w := range p.Witnesses {
			r.Witnesses = append(r.Witnesses, w.VKey())
		}
	}
	return r
}

func (r witnessResult) Text(w io.Writer) {
	if r.Quorum == 0 {
		fmt.Fprintf(w, "%s requires no witness cosignatures\n", r.Dir)
		return
	}
	fmt.Fprintf(w, "%s requires cosignatures of %d of these %d witnesses on each log checkpoint:\n", r.Dir, r.Quorum, len(r.Witnesses))
	for _, v := range r.Witnesses {
		fmt.Fprintf(w, "  %s\n", v)
	}
}

// witnessPolicy makes the policy the flags describe: nil for no witnesses; quorum 0 means all of them.
func witnessPolicy(vkeys []string, quorum int) (*checkpoint.Policy, error) {
	if len(vkeys) == 0 {
		if quorum != 0 {
			return nil, cli.UsageError("--witness-quorum needs --witness keys")
		}
		return nil, nil
	}
	var ws []keys.WitnessPublic
	for _, v := range vkeys {
		parse := keys.ParseWitnessVKey
		if strings.HasPrefix(v, "witness-key:") {
			parse = keys.ParseWitnessPublic
		}
		w, err := parse(strings.TrimSpace(v))
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	if quorum == 0 {
		quorum = len(ws)
	}
	p, err := checkpoint.NewPolicy(quorum, ws)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// trustWitnessesCmd sets the witness policy of an existing trust folder, as a node's admin does when
// the fleet starts requiring cosigned checkpoints or a witness comes or goes.
func trustWitnessesCmd() *cli.Command {
	var dir string
	var witnesses multiFlag
	var quorum int
	var none bool
	return &cli.Command{
		Path: "trust witnesses", Args: "--trust TRUST_DIR (--witness VKEY... [--quorum K] | --none)", MaxArgs: 0,
		Summary: "require cosignatures of at least K of these witnesses on each log checkpoint (replacing the trust folder's witness policy)",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&dir, "trust", "", "trust folder to change (required)")
			fs.Var(&witnesses, "witness", "a witness's key: its C2SP vkey, or a witness-key: line (repeatable)")
			fs.IntVar(&quorum, "quorum", 0, "how many of the witnesses must cosign (default: all)")
			fs.BoolVar(&none, "none", false, "remove the witness requirement")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			switch {
			case dir == "":
				return nil, cli.UsageError("trust witnesses needs --trust")
			case none && (len(witnesses) > 0 || quorum != 0):
				return nil, cli.UsageError("--none takes no --witness or --quorum")
			case !none && len(witnesses) == 0:
				return nil, cli.UsageError("trust witnesses needs --witness keys, or --none")
			}
			t, err := registry.OpenTrust(dir) // the folder must be a trust folder, and trusted
			if err != nil {
				return nil, err
			}
			if len(t.LogKeys()) == 0 && !none {
				return nil, errcode.New(errcode.KeyMalformed, "trust folder %s holds no log key: witnesses cosign log checkpoints, so there is nothing for them to cosign", dir)
			}
			policy, err := witnessPolicy(witnesses, quorum)
			if err != nil {
				return nil, err
			}
			if err := registry.SetWitnessPolicy(dir, policy); err != nil {
				return nil, err
			}
			return newWitnessResult(dir, policy), nil
		},
	}
}
