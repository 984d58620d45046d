package errcode

// Codes of module manifests. Nothing changed when any of them is returned: a manifest is checked whole
// before it is used or stored.
const (
	// ManifestMalformed: the manifest is not a single JSON object (one over its size cap is
	// statement.too_large).
	ManifestMalformed = "manifest.malformed"
	// ManifestUnknownField: the manifest names a field the schema does not know.
	ManifestUnknownField = "manifest.unknown_field"
	// ManifestInvalid: a field has a value the schema refuses (details.field names it).
	ManifestInvalid = "manifest.invalid"
	// ManifestSchemaInvalid: params or output is not valid JSON Schema 2020-12.
	ManifestSchemaInvalid = "manifest.schema_invalid"
	// ManifestParamsOpen: the params schema does not set additionalProperties to false.
	ManifestParamsOpen = "manifest.params_open"
)

var areaManifest = Area{Name: "manifest", Reserved: true, Codes: []Spec{
	{ManifestMalformed, statusBadRequest, Unchanged},
	{ManifestUnknownField, statusBadRequest, Unchanged},
	{ManifestInvalid, statusBadRequest, Unchanged},
	{ManifestSchemaInvalid, statusBadRequest, Unchanged},
	{ManifestParamsOpen, statusBadRequest, Unchanged},
}}
