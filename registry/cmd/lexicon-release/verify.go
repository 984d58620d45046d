package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type verifyResult struct {
	Release   string                 `json:"release"`
	Sequence  uint64                 `json:"sequence"`
	Statement string                 `json:"statement"`
	Publisher string                 `json:"publisher"`
	Logged    bool                   `json:"logged"`
	Accepted  bool                   `json:"accepted"`
	Floor     string                 `json:"floor,omitempty"`
	Agents    []registry.AgentPin    `json:"agents"`
	Checks    []registry.CheckResult `json:"checks"`
}

func (r verifyResult) Text(w io.Writer) {
	printChecks(w, r.Checks)
	verb := "accepted"
	if !r.Accepted {
		verb = "verified (dry run, state unchanged)"
	}
	for _, a := range r.Agents {
		fmt.Fprintf(w, "agent %s sha256 %s (version %s)\n", a.Platform, a.SHA256, r.Release)
	}
	if r.Floor != "" {
		fmt.Fprintf(w, "floor: agents below %s update before taking this vocabulary\n", r.Floor)
	}
	fmt.Fprintf(w, "release %s sequence %d %s\n", r.Release, r.Sequence, verb)
}

func printChecks(w io.Writer, checks []registry.CheckResult) {
	for _, c := range checks {
		verdict := "PASS"
		switch {
		case c.Skipped:
			verdict = "SKIP"
		case !c.OK:
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s  %-17s %s\n", verdict, c.Check, strings.TrimSpace(c.Message))
	}
}

func verifyCmd() *cli.Command {
	var trustDir string
	var dryRun bool
	return &cli.Command{
		Path: "verify", Args: "RELEASE_DIR --trust TRUST_DIR [--dry-run]", MinArgs: 1, MaxArgs: 1,
		Summary: "verify a release offline as a node does, one line per check; on success record its sequence",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&trustDir, "trust", "", "trust folder: statement_keys/*.pub, optional log_keys/*.pub, state (required)")
			fs.BoolVar(&dryRun, "dry-run", false, "verify without recording the sequence or learned keys")
		},
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			if trustDir == "" {
				return nil, cli.UsageError("verify needs --trust TRUST_DIR")
			}
			t, err := registry.OpenTrust(trustDir)
			if err != nil {
				return nil, err
			}
			rel, rep, err := t.VerifyDir(args[0], time.Now(), dryRun)
			if err != nil {
				if !env.JSON {
					printChecks(env.Stdout, rep.Checks)
				}
				return nil, errcode.From(err, errcode.StatementInvalid).With(errcode.DetailChecks, rep.Checks)
			}
			p := rel.Statement.Predicate
			return verifyResult{
				Release: p.Release, Sequence: p.Sequence, Statement: rel.Digest, Publisher: rel.Signer.Fingerprint(),
				Logged: rel.Logged, Accepted: !dryRun, Floor: p.Floor, Agents: rel.Agents(), Checks: rep.Checks,
			}, nil
		},
	}
}
