package main

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/cli/clitest"
)

// TestCLI: every group and command of lexicon-release answers --help, a mistyped command gets a suggestion and
// exit status 2, refusals keep the -o json envelope, and completion scripts are generated.
func TestCLI(t *testing.T) { clitest.Conformance(t, "lexicon-release", commands()) }
