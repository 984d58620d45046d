// Package agent is the node agent: it joins a plane, loads the vocabulary a verified statement pins,
// and runs one job at a time under the node's own policy.
package agent
