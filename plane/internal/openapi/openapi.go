// Package openapi makes the OpenAPI document of the plane's admin API from plane/api, which stays its
// source of truth: every route of api.Routes with its parameters, body, answer, role and the error
// codes it answers, and every type as a JSON Schema with its doc comment. `go generate ./plane/api`
// writes the document to plane/api/openapi.json, which the plane serves at api.SpecPath; a test fails
// while that file is stale. Check holds a running plane to the document.
package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Version is the version of the OpenAPI Specification the document follows. 3.1 describes bodies in
// JSON Schema 2020-12, and kin-openapi, which builds the document and validates it and the plane's
// traffic, reads and validates 3.1 (with the 2020-12 validator for values).
const Version = "3.1.1"

// securityScheme names the bearer token in the document.
const securityScheme = "token"

// Generate makes the document from plane/api, whose source folder is dir (for the doc comments, the
// string enums and the routes' names), validates it, and returns it as indented JSON.
func Generate(dir string) ([]byte, error) {
	doc, err := Build(dir)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	// Validated as a reader will load it: the references resolve only in the written document.
	if _, err := Load(buf.Bytes()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Load reads a document and validates it as OpenAPI.
func Load(data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load the API document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the API document is not valid OpenAPI: %w", err)
	}
	return doc, nil
}

// Build makes the document from plane/api, whose source folder is dir.
func Build(dir string) (*openapi3.T, error) {
	src, err := readSource(dir)
	if err != nil {
		return nil, err
	}
	comps := openapi3.NewComponents()
	comps.Schemas = openapi3.Schemas{}
	b := &builder{src: src, schemas: comps.Schemas, apiPkg: reflect.TypeFor[api.Route]().PkgPath()}
	b.errorSchemas()
	comps.Responses = openapi3.ResponseBodies{}
	for status, codes := range commonResponses {
		comps.Responses[commonName(status)] = &openapi3.ResponseRef{Value: errorResponse(status, codes)}
	}
	comps.SecuritySchemes = openapi3.SecuritySchemes{securityScheme: {Value: &openapi3.SecurityScheme{
		Type: "http", Scheme: "bearer",
		Description: "An admin token (lxt_...), made with POST /tokens or, for the first one, `lexicon-plane token create` on the plane's machine.",
	}}}
	doc := &openapi3.T{
		OpenAPI: Version,
		Info: &openapi3.Info{
			Title:       "Lexicon plane admin API",
			Version:     "v1",
			Description: description,
		},
		Components: &comps,
		Paths:      openapi3.NewPaths(),
		Security:   openapi3.SecurityRequirements{openapi3.NewSecurityRequirement().Authenticate(securityScheme)},
	}
	tags := map[string]bool{}
	for _, rt := range api.Routes() {
		op, err := b.operation(rt)
		if err != nil {
			return nil, err
		}
		tags[op.Tags[0]] = true
		path := api.Prefix + rt.Pattern
		item := doc.Paths.Value(path)
		if item == nil {
			item = &openapi3.PathItem{}
			doc.Paths.Set(path, item)
		}
		if item.GetOperation(rt.Method) != nil {
			return nil, fmt.Errorf("%s is listed twice", rt)
		}
		item.SetOperation(rt.Method, op)
	}
	doc.Paths.Set(api.SpecPath, &openapi3.PathItem{Get: specOperation()})
	doc.Paths.Set(api.SSOPath, &openapi3.PathItem{Get: ssoOperation()})
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for t := range tags {
			if !yield(t) {
				return
			}
		}
	}) {
		doc.Tags = append(doc.Tags, &openapi3.Tag{Name: t})
	}
	return doc, nil
}

const description = `The admin API of a Lexicon plane: its nodes, joins, jobs, incidents, releases, rollouts, drivers, ` +
	`cloud and DNS accounts and provisionings.

Every route under /api/v1/admin needs an admin token, sent as "Authorization: Bearer lxt_...". Each route ` +
	`names the least role it needs in x-role (viewer < operator < admin); a token below it is refused with ` +
	`auth.forbidden (details.need), and a missing, unknown or revoked one with auth.required.

Bodies are JSON and unknown fields are refused (request.malformed). Every error answers the envelope ` +
	`{"error":{"code","message","details"}}; the code (area.reason) is what a client branches on, and each ` +
	`response of an error status lists the codes the route answers with it. A refused request changed nothing ` +
	`unless its code says otherwise. A wrong method answers route.method_not_allowed (405, with Allow), an ` +
	`unknown path route.not_found (404). Lists answer an object holding the list and, where they page, ` +
	`next_cursor ("" on the last page), which the next request passes as ?cursor=.

This document is generated from the plane's Go package plane/api and served, without a token, at ` + api.SpecPath + `.`

// specOperation is GET api.SpecPath: this document, served without a token.
func specOperation() *openapi3.Operation {
	noAuth := openapi3.SecurityRequirements{}
	return &openapi3.Operation{
		OperationID: "Spec",
		Summary:     "This document",
		Description: "The OpenAPI document of this API. It needs no token: it says what the API is, not what the plane holds.",
		Tags:        []string{"spec"},
		Security:    &noAuth,
		Responses: openapi3.NewResponses(openapi3.WithStatus(http.StatusOK, &openapi3.ResponseRef{Value: openapi3.NewResponse().
			WithDescription("The OpenAPI document").WithJSONSchema(openapi3.NewObjectSchema())})),
	}
}

// ssoOperation is GET api.SSOPath: the single sign-on provider `lexicon login` signs in with, served
// without a token (a browser sign-in shows the same).
func ssoOperation() *openapi3.Operation {
	noAuth := openapi3.SecurityRequirements{}
	info := openapi3.NewObjectSchema().
		WithProperty("issuer", openapi3.NewStringSchema()).
		WithProperty("client_id", openapi3.NewStringSchema())
	info.Required = []string{"issuer", "client_id"}
	info.AdditionalProperties = openapi3.AdditionalProperties{Has: new(bool)}
	return &openapi3.Operation{
		OperationID: "SSO",
		Summary:     "The single sign-on provider",
		Description: "The OpenID Connect issuer and the CLI's public client that `lexicon login` signs in with. It needs no token. " +
			"A plane without single sign-on answers sso.unavailable (503).",
		Tags:     []string{"sso"},
		Security: &noAuth,
		Responses: openapi3.NewResponses(
			openapi3.WithStatus(http.StatusOK, &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription("The provider").WithJSONSchema(info)}),
			openapi3.WithStatus(http.StatusServiceUnavailable, &openapi3.ResponseRef{Value: openapi3.NewResponse().
				WithDescription("sso.unavailable: this plane has no single sign-on").WithJSONSchema(openapi3.NewObjectSchema())})),
	}
}

// builder turns plane/api's routes and types into the document's operations and schemas.
type builder struct {
	src     *source
	schemas openapi3.Schemas
	apiPkg  string
}

func (b *builder) operation(rt api.Route) (*openapi3.Operation, error) {
	rs, ok := b.src.routes[rt.String()]
	if !ok {
		return nil, fmt.Errorf("%s is not a variable of plane/api holding a Route literal: its name is the operation's id", rt)
	}
	tag, _, _ := strings.Cut(strings.TrimPrefix(rt.Pattern, "/"), "/")
	desc := "Needs the " + string(rt.Role) + " role."
	if rs.doc != "" {
		desc = rs.doc + "\n\n" + desc
	}
	op := &openapi3.Operation{
		OperationID: rs.name,
		Summary:     rt.Summary,
		Description: desc,
		Tags:        []string{tag},
		Extensions:  map[string]any{"x-role": string(rt.Role)},
		Responses:   openapi3.NewResponses(),
	}
	for _, p := range rt.Params() {
		op.Parameters = append(op.Parameters, &openapi3.ParameterRef{Value: openapi3.NewPathParameter(p).WithSchema(openapi3.NewStringSchema())})
	}
	if rt.Query != nil {
		params, err := b.query(reflect.TypeOf(rt.Query))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rt, err)
		}
		op.Parameters = append(op.Parameters, params...)
	}
	if rt.Body != nil {
		body := openapi3.NewRequestBody().WithRequired(!rt.BodyOptional)
		if s, ok := rt.Body.(api.Stream); ok {
			body.WithContent(openapi3.Content{string(s): openapi3.NewMediaType()})
		} else {
			body.WithJSONSchemaRef(b.schema(reflect.TypeOf(rt.Body)))
		}
		if rt.BodyOptional {
			body.WithDescription("Optional: an empty body stands for the zero value.")
		}
		op.RequestBody = &openapi3.RequestBodyRef{Value: body}
	}
	ok200 := openapi3.NewResponse().WithDescription(http.StatusText(rt.Status))
	if s, ok := rt.Answer.(api.Stream); ok {
		ok200.WithContent(openapi3.NewContentWithSchema(openapi3.NewStringSchema(), []string{string(s)}))
	} else {
		ok200.WithJSONSchemaRef(b.schema(reflect.TypeOf(rt.Answer)))
	}
	op.Responses = openapi3.NewResponses(openapi3.WithStatus(rt.Status, &openapi3.ResponseRef{Value: ok200}))
	for status, codes := range byStatus(rt.Codes()) {
		if slices.Equal(codes, commonResponses[status]) {
			op.Responses.Set(strconv.Itoa(status), &openapi3.ResponseRef{Ref: "#/components/responses/" + commonName(status)})
			continue
		}
		op.Responses.Set(strconv.Itoa(status), &openapi3.ResponseRef{Value: errorResponse(status, codes)})
	}
	return op, nil
}

// byStatus groups codes by the HTTP status the plane answers them with.
func byStatus(codes []string) map[int][]string {
	out := map[int][]string{}
	for _, c := range codes {
		s := errcode.Status(c)
		out[s] = append(out[s], c)
	}
	return out
}

// errorResponse is the envelope with one of codes; x-codes lists them, for a client to branch on
// (and Check holds the plane to them).
func errorResponse(status int, codes []string) *openapi3.Response {
	r := openapi3.NewResponse().WithDescription(http.StatusText(status) + ": " + strings.Join(codes, ", ")).
		WithJSONSchemaRef(openapi3.NewSchemaRef("#/components/schemas/Error", nil))
	r.Extensions = map[string]any{"x-codes": codes}
	return r
}

// commonResponses are the error answers of every route that has them, by status, as a route that
// needs admin and takes a query and a body answers them without codes of its own.
var commonResponses = byStatus(api.Route{Role: api.RoleAdmin, Query: struct{}{}, Body: struct{}{}}.Codes())

// commonName names a common response in the document's components.
func commonName(status int) string { return strings.ReplaceAll(http.StatusText(status), " ", "") }

// errorSchemas adds the error envelope, errcode.Envelope.
func (b *builder) errorSchemas() {
	body := openapi3.NewObjectSchema()
	body.Description = "An error: its code (area.reason, what a client branches on), a message for people, and details whose keys the code's documentation names."
	body.Required = []string{"code", "message"}
	body.Properties = openapi3.Schemas{
		"code":    {Value: &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}, Pattern: `^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$`}},
		"message": {Value: openapi3.NewStringSchema()},
		"details": {Value: openapi3.NewObjectSchema()},
	}
	body.AdditionalProperties = openapi3.AdditionalProperties{Has: new(false)}
	b.schemas["ErrorBody"] = &openapi3.SchemaRef{Value: body}
	env := openapi3.NewObjectSchema()
	env.Description = `The envelope every error answers: {"error":{"code","message","details"}}.`
	env.Required = []string{"error"}
	env.Properties = openapi3.Schemas{"error": openapi3.NewSchemaRef("#/components/schemas/ErrorBody", nil)}
	env.AdditionalProperties = openapi3.AdditionalProperties{Has: new(false)}
	b.schemas["Error"] = &openapi3.SchemaRef{Value: env}
}

// query is a query type's parameters, named by their query tags.
func (b *builder) query(t reflect.Type) (openapi3.Parameters, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("query type %s is not a struct", t)
	}
	var out openapi3.Parameters
	for f := range t.Fields() {
		name := f.Tag.Get("query")
		if name == "" {
			return nil, fmt.Errorf("%s.%s has no query tag", t.Name(), f.Name)
		}
		p := openapi3.NewQueryParameter(name).WithDescription(b.src.fieldDocs[t.Name()][f.Name])
		p.Schema = b.schema(f.Type)
		out = append(out, &openapi3.ParameterRef{Value: p})
	}
	return out, nil
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	durType  = reflect.TypeFor[time.Duration]()
)

// schema is t's JSON Schema: a reference to a component for plane/api's named types, inline for the
// rest.
func (b *builder) schema(t reflect.Type) *openapi3.SchemaRef {
	switch t {
	case timeType:
		return &openapi3.SchemaRef{Value: openapi3.NewDateTimeSchema()}
	case rawType:
		return &openapi3.SchemaRef{Value: &openapi3.Schema{Description: "Any JSON value."}}
	case durType:
		s := openapi3.NewInt64Schema()
		s.Description = "A duration in nanoseconds."
		return &openapi3.SchemaRef{Value: s}
	}
	if name := b.name(t); name != "" {
		ref := "#/components/schemas/" + name
		if _, done := b.schemas[name]; !done {
			b.schemas[name] = &openapi3.SchemaRef{Value: &openapi3.Schema{}} // taken, for a type that refers to itself
			s := b.inline(t)
			s.Description = b.src.typeDocs[name]
			if values := b.src.enums[name]; t.Kind() == reflect.String && len(values) > 0 {
				for _, v := range values {
					s.Enum = append(s.Enum, v)
				}
			}
			b.schemas[name] = &openapi3.SchemaRef{Value: s}
		}
		return openapi3.NewSchemaRef(ref, nil)
	}
	return &openapi3.SchemaRef{Value: b.inline(t)}
}

// name is a type's name in the document: its own for a type of plane/api, plane/api's for a type it
// declares an alias of, and "" for any other (described inline).
func (b *builder) name(t reflect.Type) string {
	if t.Name() == "" {
		return ""
	}
	if t.PkgPath() == b.apiPkg {
		return t.Name()
	}
	return b.src.aliasOf[t.PkgPath()+"."+t.Name()]
}

func (b *builder) inline(t reflect.Type) *openapi3.Schema {
	switch t.Kind() {
	case reflect.String:
		return openapi3.NewStringSchema()
	case reflect.Bool:
		return openapi3.NewBoolSchema()
	case reflect.Int, reflect.Int64:
		return openapi3.NewInt64Schema()
	case reflect.Int32, reflect.Int16, reflect.Int8:
		return openapi3.NewInt32Schema()
	case reflect.Uint16, reflect.Uint8, reflect.Uint32, reflect.Uint, reflect.Uint64:
		s := openapi3.NewIntegerSchema()
		s.Min = new(0.0)
		if t.Kind() == reflect.Uint16 {
			s.Max = new(float64(1<<16 - 1))
		}
		return s
	case reflect.Float32, reflect.Float64:
		return openapi3.NewFloat64Schema()
	case reflect.Slice, reflect.Array:
		s := openapi3.NewArraySchema()
		s.Items = b.schema(t.Elem())
		return s
	case reflect.Map:
		s := openapi3.NewObjectSchema()
		s.AdditionalProperties = openapi3.AdditionalProperties{Schema: b.schema(t.Elem())}
		return s
	case reflect.Pointer:
		return &openapi3.Schema{AnyOf: openapi3.SchemaRefs{b.schema(t.Elem()), {Value: &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeNull}}}}}
	case reflect.Struct:
		s := openapi3.NewObjectSchema()
		s.Properties = openapi3.Schemas{}
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: new(false)}
		b.fields(t, s)
		sort.Strings(s.Required)
		return s
	}
	return &openapi3.Schema{} // an interface: any JSON value
}

// fields adds t's JSON fields to s, those of an embedded struct as its own (as encoding/json does).
func (b *builder) fields(t reflect.Type, s *openapi3.Schema) {
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			b.fields(f.Type, s)
			continue
		}
		if name == "" {
			name = f.Name
		}
		ref := b.schema(f.Type)
		if doc := b.src.fieldDocs[t.Name()][f.Name]; doc != "" && t.PkgPath() == b.apiPkg {
			if ref.Ref != "" { // a description beside the component's own
				ref = &openapi3.SchemaRef{Value: &openapi3.Schema{Description: doc, AllOf: openapi3.SchemaRefs{ref}}}
			} else {
				ref.Value.Description = doc
			}
		}
		omit := false
		for o := range strings.SplitSeq(opts, ",") {
			omit = omit || o == "omitempty" || o == "omitzero"
		}
		if !omit {
			s.Required = append(s.Required, name)
		} else if k := f.Type.Kind(); (k == reflect.Slice || k == reflect.Map) && f.Type != rawType && ref.Ref == "" && ref.Value.Type != nil {
			// A field that may be left out may be null too: encoding/json reads null as absent, and a
			// client in a language without nil slices sends it for an empty list.
			ref.Value.Type = &openapi3.Types{ref.Value.Type.Slice()[0], openapi3.TypeNull}
		}
		s.Properties[name] = ref
	}
}
