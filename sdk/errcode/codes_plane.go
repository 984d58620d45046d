package errcode

// Codes of the plane's HTTP surface. Nothing changed when any of these was returned.
const (
	// RequestMalformed: the body is not the JSON the route takes, or a query parameter is wrong.
	RequestMalformed = "request.malformed"
	// RequestTooLarge: the body is over the route's cap (details.cap).
	RequestTooLarge = "request.too_large"
	// RequestRateLimited: too many requests from this node, or from this address for what proves no
	// node; retry after details.retry_after_ms.
	RequestRateLimited = "request.rate_limited"
	// AuthRequired: the admin API needs a valid bearer token.
	AuthRequired = "auth.required"
	// AuthForbidden: the token's role may not do this (details.need).
	AuthForbidden = "auth.forbidden"
	// RouteNotFound: no such route.
	RouteNotFound = "route.not_found"
	// PlaneUnreachable: a client could not reach the plane (network, TLS, or the plane is down).
	PlaneUnreachable = "plane.unreachable"
	// PlaneUnexpected: the plane answered something a client did not expect (a version mismatch?).
	PlaneUnexpected = "plane.unexpected"
	// InternalError: the plane failed; its log has the cause.
	InternalError = "internal.error"
)
