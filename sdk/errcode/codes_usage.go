package errcode

// Codes of a command's use.
const (
	// UsageInvalid: a command was called with missing or contradictory flags.
	UsageInvalid = "usage.invalid"
)

var areaUsage = Area{Name: "usage", Reserved: true, Codes: []Spec{
	{UsageInvalid, statusBadRequest, Unchanged},
}}
