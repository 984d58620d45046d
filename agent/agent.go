// Package agent is the node agent: it joins a plane, loads the vocabulary a verified statement pins,
// and runs one job at a time under the node's own policy.
//
// Operations: lexicon-agent run --metrics-listen 127.0.0.1:PORT serves the agent's metrics in the
// Prometheus text format on http://127.0.0.1:PORT/metrics, on a loopback address only (the page has no
// authentication; anything else is refused with usage.invalid). The series are listed in
// agent/internal/metrics.
package agent

import "runtime"

// Version is this agent's version, reported on every claim. `make release` stamps it from the VERSION
// file (-ldflags -X), the same version the release statement carries: a node probing a staged
// binary refuses one that does not report the version of the statement that pins it.
var Version = "0.1.0"

// Platform is the agent subject this binary is pinned under: "linux-amd64" for agent/linux-amd64.
func Platform() string { return runtime.GOOS + "-" + runtime.GOARCH }

// TestFault is set only in test builds (-ldflags -X), never by a release: it makes a binary that
// misbehaves the way a broken release would, so the update tests run real broken agents. "crash":
// `run` exits at once; "nostart": `guard` and `run` both exit at once, while `version` still answers
// (a release whose flags or state the unit no longer matches); "hang": `run` never claims;
// "nojoin": `join` does nothing and succeeds (a machine whose agent installs but never joins);
// "pause": the update stops for good after the step its update/test-pause file names, and a converge
// at the footprint step its converge/test-pause file names, each once, for a test to kill it there.
var TestFault = ""
