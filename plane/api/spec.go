package api

import (
	"bytes"
	_ "embed"
)

//go:generate go run ../internal/openapi/cmd/openapi-gen -o openapi.json

// SpecPath is where the plane serves Spec, without a token: the document says what the API is, not
// what the plane holds.
const SpecPath = "/api/v1/openapi.json"

//go:embed openapi.json
var spec []byte

// Spec returns the OpenAPI 3.1 document of the admin API, made from Routes and this package's types
// by go generate (make openapi). A test of the plane fails while it is stale.
func Spec() []byte { return bytes.Clone(spec) }
