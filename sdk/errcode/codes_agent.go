package errcode

// Codes of the node agent. A job refused with any of these did not run.
const (
	// PolicyRefused: the node's policy does not accept the word's class (details.class).
	PolicyRefused = "policy.refused"
	// PolicyUntrusted: the node's policy is missing, malformed, or writable by others; the node
	// accepts nothing until it is fixed.
	PolicyUntrusted = "policy.untrusted"
	// AgentNotJoined: the agent has no approved pairing with a plane; run lexicon-agent join.
	AgentNotJoined = "agent.not_joined"
	// AgentJoinRejected: the plane rejected this key; the next join uses a fresh one.
	AgentJoinRejected = "agent.join_rejected"
	// AgentBusy: another job holds the node's job lock.
	AgentBusy = "agent.busy"
	// WordVersionMismatch: the job names a version or digest of the word this node does not run.
	WordVersionMismatch = "word.version_mismatch"
)
