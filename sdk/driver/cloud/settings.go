package cloud

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Settings are what every cloud driver's account settings hold. A driver embeds them in its own
// settings struct and hands that to Configure:
//
//	type settings struct {
//		cloud.Settings
//		Project string `json:"project"`
//	}
type Settings struct {
	// Endpoint overrides the API's base URL (https, or http on loopback for a test server).
	Endpoint string `json:"endpoint,omitempty"`
}

func (s *Settings) shared() *Settings { return s }

// SettingsHolder is a driver's settings struct: one that embeds Settings.
type SettingsHolder interface{ shared() *Settings }

// SettingsSchema is the JSON Schema of a cloud driver's settings: endpoint, then the driver's own
// properties (JSON object members, e.g. `"project": {"type": "string"}`; "" for none), with required
// naming those that must be given. Unknown members are refused, as Configure refuses them.
func SettingsSchema(properties string, required ...string) json.RawMessage {
	var b strings.Builder
	b.WriteString("{\n  \"$schema\": \"https://json-schema.org/draft/2020-12/schema\",\n  \"type\": \"object\",\n  \"additionalProperties\": false,\n")
	if len(required) > 0 {
		r, _ := json.Marshal(required)
		b.WriteString("  \"required\": " + string(r) + ",\n")
	}
	b.WriteString("  \"properties\": {\n")
	if properties != "" {
		b.WriteString("    " + properties + ",\n")
	}
	b.WriteString("    \"endpoint\": {\"type\": \"string\", \"maxLength\": 300}\n  }\n}")
	return json.RawMessage(b.String())
}

// Configure is the start of every cloud driver's SetConfig. It decodes cfg's settings strictly into s
// (driver.config_invalid naming the field at fault), puts defaultEndpoint where no endpoint is given
// and checks the endpoint (https, or http on loopback, so a credential never crosses a network in
// clear text), and refuses an empty credential, which credentialIs describes for the person fixing it
// ("a personal access token"). It returns the endpoint, parsed.
func Configure(cfg driver.Config, s SettingsHolder, defaultEndpoint, credentialIs string) (*url.URL, error) {
	if err := driver.DecodeSettings(cfg.Settings, s); err != nil {
		return nil, err
	}
	sh := s.shared()
	if sh.Endpoint == "" {
		sh.Endpoint = defaultEndpoint
	}
	u, err := driver.CheckEndpoint("endpoint", sh.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Credential.IsZero() {
		return nil, errcode.New(errcode.DriverConfigInvalid, "the credential (%s) is empty", credentialIs).With(errcode.DetailField, "credential")
	}
	return u, nil
}

// Info is a cloud driver's answer to Info: its name and version, and the contract versions this SDK
// speaks.
func Info(name, version string) driver.Info {
	return driver.Info{Kind: driver.KindCloud, Name: name, Version: version, APIVersions: APIVersions()}
}
