// Command lexicon-release is the publisher's tool: it makes keys, builds and signs release statements,
// logs them in a transparency log, verifies them offline as a node would, and diffs two releases.
package main

import "github.com/lexicon-fleet/lexicon/sdk/cli"

func main() {
	cli.Main("lexicon-release", "build, sign, log and verify Lexicon release statements", commands())
}

func commands() []*cli.Command {
	return []*cli.Command{
		keygenCmd(), backupKeygenCmd(), buildCmd(), chainCmd("add"), chainCmd("retire"), logCmd(), verifyCmd(), diffCmd(), trustInitCmd(), trustWitnessesCmd(), proveCmd(), testLogCmd(), wasmpostCmd(), newCmd(), rebuildCheckCmd(), renewCmd(),
		{Path: "chain", Summary: "sign key-chain entries that add or retire publisher keys"},
		{Path: "trust", Summary: "make the trust folder that nodes and the plane verify releases with"},
	}
}
