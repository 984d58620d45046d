package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/lexicon-fleet/lexicon/agent"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

// versionResult is what a node probes a staged agent for before it swaps: the version and platform
// the statement names, and the toolchain that built it.
type versionResult struct {
	Version  string `json:"version"`
	Platform string `json:"platform"`
	Go       string `json:"go"`
}

func (r versionResult) Text(w io.Writer) {
	fmt.Fprintf(w, "lexicon-agent %s %s (%s)\n", r.Version, r.Platform, r.Go)
}

// versionCmd reads no file, opens no folder and needs no environment: the update probe runs it with
// an empty environment, so it must answer from the binary alone.
func versionCmd() *cli.Command {
	return &cli.Command{
		Path: "version", MaxArgs: 0, Summary: "print this agent's version, platform and Go version",
		Run: func(context.Context, *cli.Env, []string) (any, error) {
			return versionResult{Version: agent.Version, Platform: agent.Platform(), Go: runtime.Version()}, nil
		},
	}
}
