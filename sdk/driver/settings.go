package driver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// MaxSettingsSize caps the account settings a driver accepts.
const MaxSettingsSize = 64 << 10

// DecodeSettings decodes settings into v strictly: one JSON object, at most MaxSettingsSize, no field v
// does not declare. Empty settings decode as {}. A fault is driver.config_invalid.
func DecodeSettings(settings json.RawMessage, v any) error {
	if len(bytes.TrimSpace(settings)) == 0 {
		settings = json.RawMessage("{}")
	}
	if len(settings) > MaxSettingsSize {
		return errcode.New(errcode.DriverConfigInvalid, "settings are %d bytes, over the %d-byte cap", len(settings), MaxSettingsSize).With("field", "")
	}
	dec := json.NewDecoder(bytes.NewReader(settings))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		const prefix = "json: unknown field "
		if msg := err.Error(); strings.HasPrefix(msg, prefix) {
			field := strings.Trim(strings.TrimPrefix(msg, prefix), `"`)
			return errcode.New(errcode.DriverConfigInvalid, "settings have unknown field %q", field).With("field", "/"+field)
		}
		return errcode.Wrap(err, errcode.DriverConfigInvalid, "settings are not a valid JSON object").With("field", "")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errcode.New(errcode.DriverConfigInvalid, "settings have data after the JSON object").With("field", "")
	}
	return nil
}

// ValidateSettings checks settings against a JSON Schema 2020-12. A fault is driver.config_invalid with
// details.field naming the first offending field as a JSON pointer; a schema that does not compile is
// driver.internal (the driver is at fault, not the account).
func ValidateSettings(schema, settings json.RawMessage) error {
	if len(bytes.TrimSpace(settings)) == 0 {
		settings = json.RawMessage("{}")
	}
	if len(settings) > MaxSettingsSize {
		return errcode.New(errcode.DriverConfigInvalid, "settings are %d bytes, over the %d-byte cap", len(settings), MaxSettingsSize).With("field", "")
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
		return errcode.Wrap(err, errcode.DriverConfigInvalid, "settings are not one JSON value").With("field", "")
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return errcode.Wrap(err, errcode.DriverConfigInvalid, "settings do not validate").With("field", "")
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
	return errcode.New(errcode.DriverConfigInvalid, "%s: %s", name, ve.ErrorKind.LocalizedString(printer)).With("field", field)
}

var printer = message.NewPrinter(language.English)

// CheckEndpoint parses a provider API endpoint from the settings. It must be https, except on a
// loopback address (a test server), so that a credential never crosses a network in clear text. A
// fault is driver.config_invalid naming field.
func CheckEndpoint(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errcode.New(errcode.DriverConfigInvalid, "%s: %q is not an http(s) URL without credentials, query or fragment", field, raw).With("field", "/"+field)
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if isLoopback(u.Hostname()) {
			return u, nil
		}
	}
	return nil, errcode.New(errcode.DriverConfigInvalid, "%s: %q must use https (plain http only on a loopback address)", field, raw).With("field", "/"+field)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
