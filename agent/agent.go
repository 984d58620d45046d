// Package agent is the node agent: it joins a plane, loads the vocabulary a verified statement pins,
// and runs one job at a time under the node's own policy.
//
// Operations: lexicon-agent run --metrics-listen 127.0.0.1:PORT serves the agent's metrics in the
// Prometheus text format on http://127.0.0.1:PORT/metrics, on a loopback address only (the page has no
// authentication; anything else is refused with usage.invalid). The series are listed in
// agent/internal/metrics.
package agent

// Version is this agent's version, reported on every claim.
const Version = "0.1.0"
