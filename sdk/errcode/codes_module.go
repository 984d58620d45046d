package errcode

// Codes of module bytes and the content-addressed store that holds them. Nothing changed when any of them
// is returned.
const (
	// ModuleDigestMismatch: bytes do not hash to the digest that names or pins them.
	ModuleDigestMismatch = "module.digest_mismatch"
	// ModuleNotPinned: an artifact or module the verified statement does not list.
	ModuleNotPinned = "module.not_pinned"
	// ModuleNotFound: the store holds no blob with that digest.
	ModuleNotFound = "module.not_found"
)

var areaModule = Area{Name: "module", Reserved: true, Codes: []Spec{
	{ModuleDigestMismatch, statusUnprocessable, Unchanged},
	{ModuleNotPinned, statusUnprocessable, Unchanged},
	{ModuleNotFound, statusNotFound, Unchanged},
}}
