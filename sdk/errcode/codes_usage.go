package errcode

// Codes of a command's use.
const (
	// UsageInvalid: a command was called with missing or contradictory flags.
	UsageInvalid = "usage.invalid"
	// UsageInterrupted: a signal (Ctrl-C) stopped a command that was following work it had started:
	// the job, rollout or provisioning goes on without it.
	UsageInterrupted = "usage.interrupted"
)

var areaUsage = Area{Name: "usage", Reserved: true, Codes: []Spec{
	{UsageInvalid, statusBadRequest, Unchanged},
	{UsageInterrupted, statusBadRequest, MaybeChanged},
}}
