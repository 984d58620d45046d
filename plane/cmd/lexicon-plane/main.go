// Command lexicon-plane runs the management plane: the agent channel and the admin API, over SQLite by
// default or PostgreSQL, and mints admin tokens.
package main

import "github.com/lexicon-fleet/lexicon/sdk/cli"

func main() {
	cli.Main("lexicon-plane", "the Lexicon management plane", []*cli.Command{
		serveCmd(), tokenCreateCmd(), tokenListCmd(), tokenRevokeCmd(),
	})
}
