// Command footprint_drift is the recipe that reports drift: it compares the items of the footprint this
// node last converged to that are not enforced with the machine (file digests, modes and owners, users,
// groups, units, sysctl values, the firewall), and fails naming each item that drifted and how, which
// the agent escalates to a case. Enforced items are footprint_enforce's, which repairs them.
package main

import (
	"github.com/lexicon-fleet/lexicon/sdk/footprint/drift"
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type decl struct{}

func main() {
	word.Check(func(decl) (word.Verdict, error) { return drift.Check(false) })
}
