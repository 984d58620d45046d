package driver

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"strings"

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
		return errcode.New(errcode.DriverConfigInvalid, "settings are %d bytes, over the %d-byte cap", len(settings), MaxSettingsSize).With(errcode.DetailField, "")
	}
	dec := json.NewDecoder(bytes.NewReader(settings))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		const prefix = "json: unknown field "
		if msg := err.Error(); strings.HasPrefix(msg, prefix) {
			field := strings.Trim(strings.TrimPrefix(msg, prefix), `"`)
			return errcode.New(errcode.DriverConfigInvalid, "settings have unknown field %q", field).With(errcode.DetailField, "/"+field)
		}
		return errcode.Wrap(err, errcode.DriverConfigInvalid, "settings are not a valid JSON object").With(errcode.DetailField, "")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errcode.New(errcode.DriverConfigInvalid, "settings have data after the JSON object").With(errcode.DetailField, "")
	}
	return nil
}

// CheckEndpoint parses a provider API endpoint from the settings. It must be https, except on a
// loopback address (a test server), so that a credential never crosses a network in clear text. A
// fault is driver.config_invalid naming field.
func CheckEndpoint(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errcode.New(errcode.DriverConfigInvalid, "%s: %q is not an http(s) URL without credentials, query or fragment", field, raw).With(errcode.DetailField, "/"+field)
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if isLoopback(u.Hostname()) {
			return u, nil
		}
	}
	return nil, errcode.New(errcode.DriverConfigInvalid, "%s: %q must use https (plain http only on a loopback address)", field, raw).With(errcode.DetailField, "/"+field)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
