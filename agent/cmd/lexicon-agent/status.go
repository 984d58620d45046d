package main

import (
	"context"
	"fmt"
	"io"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type statusResult struct {
	Plane       string         `json:"plane"`
	JoinID      string         `json:"join_id"`
	Status      string         `json:"status"`
	NodeID      string         `json:"node_id,omitempty"`
	Fingerprint string         `json:"fingerprint"`
	PubFile     string         `json:"pub_file"`
	Policy      string         `json:"policy"`
	Statement   uint64         `json:"statement_sequence"`
	Untrusted   string         `json:"untrusted,omitempty"`
	Vocabulary  []channel.Word `json:"vocabulary"`
	// Checkpoints are the log checkpoints the node holds: its view of each log.
	Checkpoints []channel.Checkpoint `json:"checkpoints"`
}

func (r statusResult) Text(w io.Writer) {
	fmt.Fprintf(w, "plane %s\njoin %s: %s\n", r.Plane, r.JoinID, r.Status)
	if r.NodeID != "" {
		fmt.Fprintf(w, "node %s\n", r.NodeID)
	}
	fmt.Fprintf(w, "key fingerprint %s (ssh-keygen -lf %s)\npolicy: %s\nstatement sequence %d, %d words\n",
		r.Fingerprint, r.PubFile, r.Policy, r.Statement, len(r.Vocabulary))
	if r.Untrusted != "" {
		fmt.Fprintf(w, "refused: %s\n", r.Untrusted)
	}
	for _, word := range r.Vocabulary {
		fmt.Fprintf(w, "  %-20s %-8s %s\n", word.Name, word.Version, word.Class)
	}
	for _, cp := range r.Checkpoints {
		fmt.Fprintf(w, "log %s: checkpoint at size %d, root %s\n", cp.Origin, cp.Size, cp.RootHash)
	}
}

func statusCmd() *cli.Command {
	var d dirs
	return &cli.Command{
		Path: "status", MaxArgs: 0, Summary: "show the pairing, the key fingerprint, the policy and the vocabulary",
		Setup: d.setup,
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			sd, p, c, err := d.paired()
			if err != nil {
				return nil, err
			}
			if p.Status == channel.JoinPending {
				if p, err = decide(ctx, c, sd, p); err != nil {
					return nil, err
				}
			}
			res := statusResult{Plane: p.Plane, JoinID: p.JoinID, Status: p.Status, NodeID: p.NodeID, Fingerprint: p.Fingerprint,
				PubFile: sd.PubFile(), Policy: policy.Load(d.policyFile()).String(), Vocabulary: []channel.Word{},
				Checkpoints: []channel.Checkpoint{}}
			if v, err := vocab.Open(d.trustDir(), sd.ModulesDir(), nil); err == nil {
				res.Statement, res.Untrusted, res.Vocabulary = v.Ref().Sequence, v.Untrusted(), v.Report()
				res.Checkpoints = append(res.Checkpoints, v.Checkpoints()...)
			}
			return res, nil
		},
	}
}
