package errcode

// Codes of the fleet security view's settings. Returned as errors, nothing changed: a refused setting
// left the list in force as it was.
const (
	// SecurityCriticalInvalid: the critical package list is not 0 to 100 patterns, each 1 to 128 bytes
	// that path.Match accepts and that name a package (a-z, 0-9, + - . and the wildcards * ? [ ]);
	// details.index names the first refused (0-based), details.reason why.
	SecurityCriticalInvalid = "security.critical_invalid"
)

var areaSecurity = Area{Name: "security", Reserved: true, Codes: []Spec{
	{SecurityCriticalInvalid, statusBadRequest, Unchanged},
}}
