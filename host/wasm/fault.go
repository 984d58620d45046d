package wasm

import "github.com/lexicon-fleet/lexicon/host/wasm/internal/caps"

// SetFault calls f at each named step of the footprint capabilities ("artifact.staged",
// "fs.install.half", "fs.install.renamed", "pkg.ensure.done", "systemd.before_restart"), where the
// kill tests end the process; nil removes it. Only tests set it: this package's own, and an agent
// built for a test (agent.TestFault "pause"). It is set once, before any word runs.
func SetFault(f func(step string)) { caps.SetFault(f) }
