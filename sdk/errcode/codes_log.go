package errcode

// Codes of the transparency log.
const (
	// LogUnavailable: the transparency log, or the timestamp authority beside it, refused or could not
	// be reached. The bundle on disk is unchanged.
	LogUnavailable = "log.unavailable"
)

var areaLog = Area{Name: "log", Reserved: true, Codes: []Spec{
	{LogUnavailable, statusBadRequest, Unchanged},
}}
