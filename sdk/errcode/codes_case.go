package errcode

// Codes of case intake: what the plane did not take from the cases a node reported on a claim. None of
// them fails the claim; each is logged with the node and the case id. The rest of the claim (the node's
// report, its other cases) is recorded as usual.
const (
	// CaseInvalid: a case report breaks the wire contract (details.field names it: a zero id, an
	// unknown state, a recipe name that is not one, a close time on an open case). That case was not
	// recorded.
	CaseInvalid = "case.invalid"
	// CaseCapped: part of a case was over the plane's caps and was cut (details.field: a long summary
	// or note is shortened, notes beyond the cap are dropped, a body over its cap is dropped). The
	// rest of the case was recorded.
	CaseCapped = "case.capped"
	// CaseClosed: the node reported as open a case the plane holds as closed. A closed case is never
	// reopened; nothing changed.
	CaseClosed = "case.closed"
	// CaseSuperseded: the node reported as open a case whose id is below the newest case the plane
	// holds for that recipe. Nothing changed.
	CaseSuperseded = "case.superseded"
	// CaseTooManyOpen: the node already has as many open cases as the plane keeps per node
	// (details.max). The new case was not recorded.
	CaseTooManyOpen = "case.too_many_open"
	// CaseTooMany: the claim carried more cases than the wire allows (details.max); the ones beyond
	// the cap were not read.
	CaseTooMany = "case.too_many"
	// CaseNotFound: the node has no case with that id (admin API). Nothing changed.
	CaseNotFound = "case.not_found"
)

var areaCase = Area{Name: "case", Reserved: true, Codes: []Spec{
	{CaseInvalid, statusBadRequest, Unchanged},
	{CaseCapped, statusBadRequest, PartlyChanged},
	{CaseClosed, statusBadRequest, Unchanged},
	{CaseSuperseded, statusBadRequest, Unchanged},
	{CaseTooManyOpen, statusBadRequest, Unchanged},
	{CaseTooMany, statusConflict, PartlyChanged},
	{CaseNotFound, statusNotFound, Unchanged},
}}
