// Command lexfix-repo builds apttest's fixture repository (build/aptfixture, under the tests' lock,
// reused while its inputs are unchanged) and prints, as one JSON document, its folder, its public key
// and the apt sources list a machine names it with at --url, and the fixture's library and daemon.
// make demo runs it for its Debian machine: the demo, an outside author's program, may not import
// apttest (fences_test.go), so it runs this instead and serves the folder itself. Run it inside the
// checkout.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr/apttest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "lexfix-repo: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return errcode.New(errcode.UsageInvalid, "usage: lexfix-repo URL (where machines reach the repository's folder, http://HOST:PORT/PATH)")
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := apttest.ModuleRoot(wd)
	if err != nil {
		return errcode.Wrap(err, errcode.UsageInvalid, "run it inside the Lexicon checkout")
	}
	repo, err := apttest.BuildRepo(root)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(filepath.Join(repo, apttest.KeyringName))
	if err != nil {
		return err
	}
	keyring := "/etc/apt/keyrings/" + apttest.KeyringName
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"repo": repo, "keyring": key, "keyring_path": keyring, "sources_list": apttest.SourcesList(args[0], keyring),
		"lib": apttest.Lib, "daemon": apttest.Daemon, "daemon_unit": apttest.DaemonUnit,
	})
}
