package errcode

// Codes of the node agent. A job refused with any of these did not run.
const (
	// AgentNotJoined: the agent has no approved pairing with a plane; run lexicon-agent join.
	AgentNotJoined = "agent.not_joined"
	// AgentJoinRejected: the plane rejected this key; the next join uses a fresh one.
	AgentJoinRejected = "agent.join_rejected"
	// AgentBusy: another job holds the node's job lock.
	AgentBusy = "agent.busy"
	// AgentNeedsNewerAgent: the statement's floor is above this agent's version; the node keeps the
	// vocabulary it had and updates itself from that statement first.
	AgentNeedsNewerAgent = "agent.needs_newer_agent"
	// AgentUpdateRefused: a staged agent binary was refused before it was swapped in: it did not
	// answer `version` with the version and platform its statement names. Nothing was swapped.
	AgentUpdateRefused = "agent.update_refused"
)

var areaAgent = Area{Name: "agent", Reserved: true, Codes: []Spec{
	{AgentNotJoined, statusConflict, Unchanged},
	{AgentJoinRejected, statusBadRequest, Unchanged},
	{AgentBusy, statusBadRequest, Unchanged},
	{AgentNeedsNewerAgent, statusConflict, Unchanged},
	{AgentUpdateRefused, statusUnprocessable, Unchanged},
}}
