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
	verb := "accepted: the trust folder records its sequence"
	if !r.Accepted {
		verb = "verified; the trust folder is unchanged (--accept records the sequence, as a node does)"
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
	var accept bool
	return &cli.Command{
		Path: "verify", Args: "RELEASE_DIR --trust TRUST_DIR [--accept]", MinArgs: 1, MaxArgs: 1,
		Summary: "verify a release offline as a node does, one line per check; the trust folder is left as it is unless --accept",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&trustDir, "trust", "", "trust folder: statement_keys/*.pub, optional log_keys/*.pub, state (required)")
			fs.BoolVar(&accept, "accept", false, "on success, record the sequence and the keys the release's chain adds in the trust folder, as a node does: older releases are refused afterwards")
		},
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			if trustDir == "" {
				return nil, cli.UsageError("verify needs --trust TRUST_DIR")
			}
			t, err := registry.OpenTrust(trustDir)
			if err != nil {
				return nil, err
			}
			rel, rep, err := t.VerifyDir(args[0], time.Now(), !accept)
			if err != nil {
				if !env.JSON {
					printChecks(env.Stdout, rep.Checks)
				}
				return nil, errcode.From(err, errcode.StatementInvalid).With(errcode.DetailChecks, rep.Checks)
			}
			p := rel.Statement.Predicate
			return verifyResult{
				Release: p.Release, Sequence: p.Sequence, Statement: rel.Digest, Publisher: rel.Signer.Fingerprint(),
				Logged: rel.Logged, Accepted: accept, Floor: p.Floor, Agents: rel.Agents(), Checks: rep.Checks,
			}, nil
		},
	}
}
