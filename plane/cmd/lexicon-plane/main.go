// Command lexicon-plane runs the management plane: the agent channel and the admin API, over SQLite by
// default or PostgreSQL, and mints admin tokens.
package main

import "github.com/lexicon-fleet/lexicon/sdk/cli"

func main() {
	cli.Main("lexicon-plane", "the Lexicon management plane", commands())
}

func commands() []*cli.Command {
	return []*cli.Command{
		serveCmd(), backupCmd(), restoreCmd(), keyRotateCmd(), tokenCreateCmd(), tokenListCmd(), tokenRevokeCmd(),
		{Path: "key", Summary: "rotate the master key that seals credentials"},
		{Path: "token", Summary: "create, list and revoke admin tokens"},
	}
}
