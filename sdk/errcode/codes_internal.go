package errcode

// The code of a failure the plane does not explain to its client. Whether the request changed anything is
// unknown; the plane's log has the cause.
const (
	// InternalError: the plane failed; its log has the cause.
	InternalError = "internal.error"
)

var areaInternal = Area{Name: "internal", Reserved: true, Codes: []Spec{
	{InternalError, statusInternal, MaybeChanged},
}}
