package errcode

// Codes of the node agent. A job refused with any of these did not run.
const (
	// AgentNotJoined: the agent has no approved pairing with a plane; run lexicon-agent join.
	AgentNotJoined = "agent.not_joined"
	// AgentJoinRejected: the plane rejected this key; the next join uses a fresh one.
	AgentJoinRejected = "agent.join_rejected"
	// AgentBusy: another job holds the node's job lock.
	AgentBusy = "agent.busy"
)

var areaAgent = Area{Name: "agent", Reserved: true, Codes: []Spec{
	{AgentNotJoined, statusConflict, Unchanged},
	{AgentJoinRejected, statusBadRequest, Unchanged},
	{AgentBusy, statusBadRequest, Unchanged},
}}
