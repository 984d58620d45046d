// Package configschema checks a driver's account settings against the JSON Schema the driver
// publishes. The host runs it before SetConfig, so that driver executables need not link (and start up)
// a schema engine; drivers still decode their settings strictly.
package configschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Validate checks settings against a JSON Schema 2020-12. A fault is driver.config_invalid with
// details.field naming the first offending field as a JSON pointer; a schema that does not compile is
// driver.internal (the driver is at fault, not the account).
func Validate(schema, settings json.RawMessage) error {
	if len(bytes.TrimSpace(settings)) == 0 {
		settings = json.RawMessage("{}")
	}
	if len(settings) > driver.MaxSettingsSize {
		return errcode.New(errcode.DriverConfigInvalid, "settings are %d bytes, over the %d-byte cap", len(settings), driver.MaxSettingsSize).With(errcode.DetailField, "")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return errcode.Wrap(err, errcode.DriverInternal, "the driver's config schema is not JSON")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("config.json", doc); err != nil {
		return errcode.Wrap(err, errcode.DriverInternal, "the driver's config schema does not load")
	}
	s, err := c.Compile("config.json")
	if err != nil {
		return errcode.Wrap(err, errcode.DriverInternal, "the driver's config schema does not compile")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(settings))
	if err != nil {
		return errcode.Wrap(err, errcode.DriverConfigInvalid, "settings are not one JSON value").With(errcode.DetailField, "")
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return errcode.Wrap(err, errcode.DriverConfigInvalid, "settings do not validate").With(errcode.DetailField, "")
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := ve.InstanceLocation
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		loc = append(loc[:len(loc):len(loc)], k.Missing[0])
	case *kind.AdditionalProperties:
		loc = append(loc[:len(loc):len(loc)], k.Properties[0])
	}
	field := ""
	if len(loc) > 0 {
		field = "/" + strings.Join(loc, "/")
	}
	name := field
	if name == "" {
		name = "settings"
	}
	return errcode.New(errcode.DriverConfigInvalid, "%s: %s", name, ve.ErrorKind.LocalizedString(printer)).With(errcode.DetailField, field)
}

var printer = message.NewPrinter(language.English)
