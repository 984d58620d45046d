package main

import (
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

// Package items are compared with the package database through pkg.query (drift.Observe), so a
// package already as declared is unchanged. Changing one is another matter: the package capability
// upgrades installed packages (pkg.upgrade, to the candidate version) and neither installs, removes nor
// pins one, so a package item that differs fails here, saying so, and the rest of the footprint
// converges. applyPackage is where an install or removal is to be asked for once the capability has
// one.
func applyPackage(p footprint.Package) ([]string, error) {
	return nil, word.Fail(errcode.CapabilityUnknown, "package %s: the package capability cannot install, remove or pin a package yet, so converge leaves it as it is", p.Name).
		With(errcode.DetailReason, "no install or remove in the package capability")
}
