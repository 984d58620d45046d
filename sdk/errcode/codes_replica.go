package errcode

// Codes of the plane's replicas: the processes that serve one plane from one store.
const (
	// ReplicaNotFound: no replica has that id (lexicon plane status lists them). Nothing changed.
	ReplicaNotFound = "replica.not_found"
	// ReplicaAlive: the replica still heartbeats within its lease, so it cannot be forgotten: it would
	// come back at its next heartbeat. Stop it first. Nothing changed.
	ReplicaAlive = "replica.alive"
	// ReplicaNotReady: this replica cannot serve (GET /readyz): its store does not answer, the
	// database's migrations are not this binary's, or its master key is not loaded (details.reason
	// names the check). Nothing changed.
	ReplicaNotReady = "replica.not_ready"
)

var areaReplica = Area{Name: "replica", Reserved: true, Codes: []Spec{
	{ReplicaNotFound, statusNotFound, Unchanged},
	{ReplicaAlive, statusConflict, Unchanged},
	{ReplicaNotReady, statusUnavailable, Unchanged},
}}
