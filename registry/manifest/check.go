package manifest

import (
	"bytes"
	"errors"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// CheckParams validates params (one JSON object) against the params schema. A fault is
// word.param_invalid with details.field naming the first offending field as a JSON pointer.
func (m *Manifest) CheckParams(params []byte) error {
	if m.params == nil {
		if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("{}")) {
			return nil
		}
		return errcode.New(errcode.WordParamInvalid, "%s takes no params", m.Name).With(errcode.DetailField, "")
	}
	return check(m.params, params, errcode.WordParamInvalid, "params")
}

// CheckOutput validates a result against the output schema (word.output_invalid).
func (m *Manifest) CheckOutput(output []byte) error {
	if m.output == nil {
		return nil
	}
	return check(m.output, output, errcode.WordOutputInvalid, "output")
}

// CheckSchema validates doc against a compiled schema; code and what name the fault.
func CheckSchema(s *jsonschema.Schema, doc []byte, code, what string) error {
	return check(s, doc, code, what)
}

func check(s *jsonschema.Schema, doc []byte, code, what string) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return errcode.Wrap(err, code, "%s are not one JSON value", what).With(errcode.DetailField, "")
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return errcode.Wrap(err, code, "%s do not validate", what).With(errcode.DetailField, "")
	}
	leaf := deepest(ve)
	loc := leaf.InstanceLocation
	// For a missing or extra property the location is its object; name the property itself.
	switch k := leaf.ErrorKind.(type) {
	case *kind.Required:
		loc = append(loc[:len(loc):len(loc)], k.Missing[0])
	case *kind.AdditionalProperties:
		loc = append(loc[:len(loc):len(loc)], k.Properties[0])
	}
	field := ""
	if len(loc) > 0 {
		field = "/" + strings.Join(loc, "/")
	}
	msg := leaf.ErrorKind.LocalizedString(printer())
	name := field
	if name == "" {
		name = what
	}
	return errcode.New(code, "%s: %s", name, msg).With(errcode.DetailField, field)
}

// printer is made at first use: built at package init, it ran in every start of every binary importing
// this package, each wasm worker of the agent included.
var printer = sync.OnceValue(func() *message.Printer { return message.NewPrinter(language.English) })

// deepest follows the first cause down, where the message names the concrete field.
func deepest(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return ve
}
