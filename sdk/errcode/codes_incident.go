package errcode

// Codes of incidents.
const (
	// IncidentNotFound: no incident has that id. Nothing changed.
	IncidentNotFound = "incident.not_found"
)

var areaIncident = Area{Name: "incident", Reserved: true, Codes: []Spec{
	{IncidentNotFound, statusNotFound, Unchanged},
}}
