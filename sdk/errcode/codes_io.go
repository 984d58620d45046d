package errcode

// Codes of local files.
const (
	// IOFailed: a local file could not be read or written.
	IOFailed = "io.failed"
)

var areaIO = Area{Name: "io", Reserved: true, Codes: []Spec{
	{IOFailed, statusBadRequest, Unchanged},
}}
