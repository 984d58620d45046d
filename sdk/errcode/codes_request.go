package errcode

// Codes of a request the plane's HTTP surface refused before reading it as an operation. Nothing changed
// when any of them is returned.
const (
	// RequestMalformed: the body is not the JSON the route takes, or a query parameter is wrong.
	RequestMalformed = "request.malformed"
	// RequestTooLarge: the body is over the route's cap (details.cap).
	RequestTooLarge = "request.too_large"
	// RequestRateLimited: too many requests from this node, or from this address for what proves no
	// node; retry after details.retry_after_ms.
	RequestRateLimited = "request.rate_limited"
)

var areaRequest = Area{Name: "request", Reserved: true, Codes: []Spec{
	{RequestMalformed, statusBadRequest, Unchanged},
	{RequestTooLarge, statusTooLarge, Unchanged},
	{RequestRateLimited, statusTooManyRequests, Unchanged},
}}
