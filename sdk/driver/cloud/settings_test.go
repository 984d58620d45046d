package cloud_test

import (
	"encoding/json"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type projectSettings struct {
	Project string `json:"project"`
	cloud.Settings
}

// TestConfigure: the shared preamble decodes a driver's own settings beside the endpoint, puts the
// default endpoint in, and refuses unknown fields, an endpoint that would carry the credential in clear
// text, and an empty credential, each as driver.config_invalid naming its field.
func TestConfigure(t *testing.T) {
	token := driver.NewSecret("t0ken")
	var s projectSettings
	u, err := cloud.Configure(driver.Config{Settings: json.RawMessage(`{"project": "p1"}`), Credential: token}, &s,
		"https://api.example.test/v1", "an API token")
	if err != nil || u.String() != "https://api.example.test/v1" || s.Project != "p1" || s.Endpoint != "https://api.example.test/v1" {
		t.Fatalf("%v %v %+v", u, err, s)
	}
	u, err = cloud.Configure(driver.Config{Settings: json.RawMessage(`{"endpoint": "http://127.0.0.1:8080/v4"}`), Credential: token},
		&projectSettings{}, "https://api.example.test/v1", "an API token")
	if err != nil || u.Host != "127.0.0.1:8080" || u.Path != "/v4" {
		t.Fatalf("a loopback test server: %v %v", u, err)
	}
	for name, tc := range map[string]struct {
		settings string
		cred     driver.Secret
		field    string
	}{
		"unknown field":      {`{"project": "p", "region": "x"}`, token, "/region"},
		"clear-text network": {`{"endpoint": "http://api.example.test/v1"}`, token, "/endpoint"},
		"not a URL":          {`{"endpoint": "::"}`, token, "/endpoint"},
		"empty credential":   {`{}`, driver.Secret{}, "credential"},
		"not an object":      {`[]`, token, ""},
	} {
		_, err := cloud.Configure(driver.Config{Settings: json.RawMessage(tc.settings), Credential: tc.cred}, &projectSettings{},
			"https://api.example.test/v1", "an API token")
		e := errcode.From(err, "")
		if e == nil || e.Code != errcode.DriverConfigInvalid || e.Details["field"] != tc.field {
			t.Errorf("%s: %v (details %v)", name, err, e)
		}
	}
}

// TestSettingsSchema: the schema is one JSON Schema object holding endpoint and the driver's own
// properties, refusing unknown ones.
func TestSettingsSchema(t *testing.T) {
	for name, tc := range map[string]struct {
		raw      json.RawMessage
		props    []string
		required []string
	}{
		"shared only": {cloud.SettingsSchema(""), []string{"endpoint"}, nil},
		"with a project": {cloud.SettingsSchema(`"project": {"type": "string", "minLength": 1}`, "project"),
			[]string{"endpoint", "project"}, []string{"project"}},
	} {
		var s struct {
			Schema               string                     `json:"$schema"`
			Type                 string                     `json:"type"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
			Required             []string                   `json:"required"`
			Properties           map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tc.raw, &s); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, tc.raw)
		}
		if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties || len(s.Properties) != len(tc.props) ||
			len(s.Required) != len(tc.required) {
			t.Fatalf("%s: %s", name, tc.raw)
		}
		for _, p := range tc.props {
			if _, ok := s.Properties[p]; !ok {
				t.Fatalf("%s: no %q: %s", name, p, tc.raw)
			}
		}
	}
}
