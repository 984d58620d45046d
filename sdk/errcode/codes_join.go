package errcode

// Codes of enrolment requests (joins). Nothing changed when any of them is returned.
const (
	// JoinNotFound: no join has that id.
	JoinNotFound = "join.not_found"
	// JoinTooMany: the cap on pending joins, overall (details.scope "all") or from one source address
	// (details.scope "source"), is reached. Wait for the admin to approve or reject, or for joins to
	// expire.
	JoinTooMany = "join.too_many"
	// JoinKeyRetired: the key was rejected, or its node was disconnected or left. A retired key can never
	// join again; the agent must make a fresh key.
	JoinKeyRetired = "join.key_retired"
	// JoinKeyEnrolled: the key already belongs to a node. An enrolled node does not join again.
	JoinKeyEnrolled = "join.key_enrolled"
	// JoinFingerprintMismatch: the fingerprint the admin typed is not exactly the join's key
	// fingerprint. The join stays pending; compare again with what the agent printed.
	JoinFingerprintMismatch = "join.fingerprint_mismatch"
	// JoinExpired: the join expired before it was renewed or approved. The agent must send a new join.
	JoinExpired = "join.expired"
	// JoinNotPending: the join was already approved or rejected (details.status).
	JoinNotPending = "join.not_pending"
)

var areaJoin = Area{Name: "join", Reserved: true, Codes: []Spec{
	{JoinNotFound, statusNotFound, Unchanged},
	{JoinTooMany, statusConflict, Unchanged},
	{JoinKeyRetired, statusConflict, Unchanged},
	{JoinKeyEnrolled, statusConflict, Unchanged},
	{JoinFingerprintMismatch, statusConflict, Unchanged},
	{JoinExpired, statusConflict, Unchanged},
	{JoinNotPending, statusConflict, Unchanged},
}}
