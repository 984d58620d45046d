package errcode

// Codes of the node's local policy, as the agent applies it to a job. A job refused with any of these did
// not run.
const (
	// PolicyRefused: the node's policy does not accept the word's class (details.class).
	PolicyRefused = "policy.refused"
	// PolicyUntrusted: the node's policy is missing, malformed, or writable by others; the node
	// accepts nothing until it is fixed.
	PolicyUntrusted = "policy.untrusted"
)

var areaPolicy = Area{Name: "policy", Reserved: true, Codes: []Spec{
	{PolicyRefused, statusBadRequest, Unchanged},
	{PolicyUntrusted, statusBadRequest, Unchanged},
}}
