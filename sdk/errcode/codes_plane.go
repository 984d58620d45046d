package errcode

// Codes a client reports about the plane it talked to. The request may have reached the plane, so whether
// it changed anything is unknown: look before retrying.
const (
	// PlaneUnreachable: a client could not reach the plane (network, TLS, or the plane is down).
	PlaneUnreachable = "plane.unreachable"
	// PlaneUnexpected: the plane answered something a client did not expect (a version mismatch?).
	PlaneUnexpected = "plane.unexpected"
)

var areaPlane = Area{Name: "plane", Reserved: true, Codes: []Spec{
	{PlaneUnreachable, statusBadRequest, MaybeChanged},
	{PlaneUnexpected, statusBadRequest, MaybeChanged},
}}
