package errcode

// Codes of the plane's routing. Nothing changed when any of them is returned.
const (
	// RouteNotFound: no such route.
	RouteNotFound = "route.not_found"
	// RouteMethodNotAllowed: the route exists but not with this method; the Allow header (and
	// details.allow) names the methods it takes.
	RouteMethodNotAllowed = "route.method_not_allowed"
)

var areaRoute = Area{Name: "route", Reserved: true, Codes: []Spec{
	{RouteNotFound, statusNotFound, Unchanged},
	{RouteMethodNotAllowed, statusMethodNotAllowed, Unchanged},
}}
