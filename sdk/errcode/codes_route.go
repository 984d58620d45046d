package errcode

// Codes of the plane's routing. Nothing changed when any of them is returned.
const (
	// RouteNotFound: no such route.
	RouteNotFound = "route.not_found"
)

var areaRoute = Area{Name: "route", Reserved: true, Codes: []Spec{
	{RouteNotFound, statusNotFound, Unchanged},
}}
