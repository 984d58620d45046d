// Command lexicon-agent is the node agent: it joins a plane, then runs the words of the newest
// statement it can verify, one job at a time, under the node's own policy.
package main

import (
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

func main() {
	// The word host runs words in supervised copies of this binary; a copy started as a worker never
	// reaches the command line.
	wasm.ServeWorkerIfChild()
	cli.Main("lexicon-agent", "the Lexicon node agent", commands())
}

func commands() []*cli.Command {
	return []*cli.Command{
		joinCmd(), statusCmd(), leaveCmd(), runCmd(), recipesCmd(), wordRunCmd(), releaseInstallCmd(), versionCmd(), guardCmd(),
		{Path: "word", Summary: "run a word on this machine by hand, from a verified release or, for authors, a module"},
		{Path: "release", Summary: "install a release on a node that runs without a plane"},
	}
}
