package main

import (
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

// Package items go through the system package manager's capability (pkg.*), which this release of
// the word does not link yet. Until it does, every package item fails with capability.unknown, saying
// so, and the rest of the footprint converges. applyPackage is where the install or removal is asked
// for (the comparison is drift's observePackage, through pkg.query).
func applyPackage(p footprint.Package) ([]string, error) {
	return nil, word.Fail(errcode.CapabilityUnknown, "package %s: this converge word has no package capability yet, so package items are not converged", p.Name).
		With(errcode.DetailReason, "no package capability")
}
