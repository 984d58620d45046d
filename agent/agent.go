// Package agent is the node agent: it joins a plane, loads the vocabulary a verified statement pins,
// and runs one job at a time under the node's own policy.
package agent

// Version is this agent's version, reported on every claim.
const Version = "0.1.0"
