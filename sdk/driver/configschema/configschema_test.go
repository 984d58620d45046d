package configschema_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/driver/configschema"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestValidate(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["zone"],
		"properties":{"zone":{"type":"string","minLength":1},"port":{"type":"integer","minimum":1,"maximum":65535}}}`)
	cases := []struct {
		settings string
		ok       bool
		field    string // the field a refusal names, when there is one
	}{
		{`{"zone":"example.com"}`, true, ""},
		{`{"zone":"example.com","port":53}`, true, ""},
		{`{}`, false, "/zone"},
		{``, false, "/zone"},
		{`{"zone":"x","extra":1}`, false, "/extra"},
		{`{"zone":"x","port":70000}`, false, "/port"},
		{`[1]`, false, ""},
		{`{"zone":`, false, ""},
	}
	for _, c := range cases {
		err := configschema.Validate(schema, json.RawMessage(c.settings))
		if c.ok {
			if err != nil {
				t.Errorf("%s: %v", c.settings, err)
			}
			continue
		}
		var e *errcode.Error
		if !errors.As(err, &e) || e.Code != errcode.DriverConfigInvalid {
			t.Errorf("%s: got %v, want driver.config_invalid", c.settings, err)
			continue
		}
		if c.field != "" && e.Details["field"] != c.field {
			t.Errorf("%s: field %v, want %s", c.settings, e.Details["field"], c.field)
		}
	}
	if err := configschema.Validate(json.RawMessage(`{"type": 12}`), json.RawMessage(`{}`)); !errcode.Has(err, errcode.DriverInternal) {
		t.Errorf("a broken schema: got %v, want driver.internal", err)
	}
}
