package footprint

import _ "embed"

// schema is the published JSON Schema (draft 2020-12) of the footprint format, footprint.schema.json
// beside this file. The converge word's manifest carries the same schema for its "footprint" param,
// and a test holds the two, and the schema and Decode, to each other.
//
//go:embed footprint.schema.json
var schema []byte

// Schema returns the published JSON Schema of the format.
func Schema() []byte { return append([]byte(nil), schema...) }
