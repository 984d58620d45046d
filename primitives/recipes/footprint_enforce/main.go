// Command footprint_enforce is the recipe that repairs drift of enforced items: it compares the items of
// the footprint this node last converged to that are enforced with the machine, and fails naming each
// item that drifted, with the converge word's params to repair exactly those items of the recorded
// footprint. The agent runs that repair under its recipe loop's rules (two failing ticks, three
// attempts, the job lock, hold/footprint_enforce), and opens a case when the attempts are spent.
package main

import (
	"github.com/lexicon-fleet/lexicon/sdk/footprint/drift"
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type decl struct{}

func main() {
	word.Check(func(decl) (word.Verdict, error) { return drift.Check(true) })
}
