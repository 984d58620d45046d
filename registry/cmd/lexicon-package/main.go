// Command lexicon-package makes the Debian packages of built Lexicon binaries: lexicon-agent (the node
// agent with its systemd unit and folders), lexicon-plane (the management plane with its unit and
// account) and lexicon-cli (the admin's lexicon command), for one architecture at a time.
package main

import "github.com/lexicon-fleet/lexicon/sdk/cli"

func main() {
	cli.Main("lexicon-package", "make the Debian packages of built Lexicon binaries", commands())
}

func commands() []*cli.Command {
	return []*cli.Command{debCmd()}
}
