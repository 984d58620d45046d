package errcode

// Codes a client reports about the plane it talked to. The request may have reached the plane, so whether
// it changed anything is unknown: look before retrying.
const (
	// PlaneUnreachable: a client could not reach the plane (network, TLS, or the plane is down).
	PlaneUnreachable = "plane.unreachable"
	// PlaneUnexpected: the plane answered something a client did not expect (a version mismatch?).
	PlaneUnexpected = "plane.unexpected"
	// PlaneUntrusted: the plane's certificate did not verify against the CA the client used (its
	// --ca, or the system's), or names another host; nothing was sent.
	PlaneUntrusted = "plane.untrusted"
)

var areaPlane = Area{Name: "plane", Reserved: true, Codes: []Spec{
	{PlaneUnreachable, statusBadRequest, MaybeChanged},
	{PlaneUnexpected, statusBadRequest, MaybeChanged},
	{PlaneUntrusted, statusBadRequest, Unchanged},
}}
