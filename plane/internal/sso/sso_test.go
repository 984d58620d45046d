package sso_test

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/sso"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const good = `{"issuer": "https://id.example.com", "client_id": "lexicon", "client_secret": "s", "cli_client_id": "lexicon-cli",
	"roles": {"ops": "operator"}}`

// TestParse: a config file is read strictly; each mistake is sso.config_invalid naming its field.
func TestParse(t *testing.T) {
	c, err := sso.Parse([]byte(good))
	if err != nil || c.GroupsClaim != "groups" || c.RefreshEvery.Minutes() != 5 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for name, text := range map[string]string{
		"plain http":    `{"issuer": "http://id.example.com", "client_id": "a", "client_secret": "s", "roles": {"g": "viewer"}}`,
		"no secret":     `{"issuer": "https://id.example.com", "client_id": "a", "roles": {"g": "viewer"}}`,
		"same clients":  `{"issuer": "https://id.example.com", "client_id": "a", "client_secret": "s", "cli_client_id": "a", "roles": {"g": "viewer"}}`,
		"no roles":      `{"issuer": "https://id.example.com", "client_id": "a", "client_secret": "s"}`,
		"unknown role":  `{"issuer": "https://id.example.com", "client_id": "a", "client_secret": "s", "roles": {"g": "root"}}`,
		"unknown field": `{"issuer": "https://id.example.com", "client_id": "a", "client_secret": "s", "roles": {"g": "viewer"}, "x": 1}`,
		"short refresh": `{"issuer": "https://id.example.com", "client_id": "a", "client_secret": "s", "roles": {"g": "viewer"}, "refresh_every": "1s"}`,
		"two values":    good + good,
		"not json":      `issuer: x`,
	} {
		_, err := sso.Parse([]byte(text))
		testkit.WantCode(t, err, errcode.SSOConfigInvalid)
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := sso.Parse([]byte(`{"issuer": "http://127.0.0.1:5556/", "client_id": "a", "client_secret": "s", "roles": {"g": "viewer"}}`)); err != nil {
		t.Fatalf("plain http on loopback: %v", err)
	}
}

// FuzzParse: no config file makes Parse panic, and what it accepts names a role for every group.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"roles": {"": "admin"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := sso.Parse(data)
		if err != nil {
			testkit.WantCode(t, err, errcode.SSOConfigInvalid)
			return
		}
		if len(c.Roles) == 0 || c.Issuer == "" {
			t.Fatalf("accepted %q as %+v", data, c)
		}
	})
}
