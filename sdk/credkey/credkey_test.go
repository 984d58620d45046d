package credkey_test

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/credkey"
)

// TestIs: the strict rule, which redaction applies to every field of every output.
func TestIs(t *testing.T) {
	for k, want := range map[string]bool{
		"password": true, "passwd": true, "db_password": true, "DB_PASSWORD": true, "secret": true,
		"client_secret": true, "token": true, "auth_token": true, "accessToken": true, "api_key": true,
		"apikey": true, "apiKey": true, "X-API-Key": true, "private_key": true, "privateKey": true,
		"authorization": true, "Proxy-Authorization": true, "credential": true, "credentials": true,
		"access_key": true, "aws_secret_access_key": true, "cookie": true, "Set-Cookie": true,
		"password_hash": true, "secret_key_base": true, "session_id": true, "passphrase": true,
		"key": false, "public_key": false, "token_expiry": false, "password_changed_at": false,
		"secret_name": false, "max_tokens": false, "token_type": false, "private_key_path": false,
		"keyid": false, "hostname": false, "monkey": false, "tokenizer": false, "digest": false,
		"author": false, "passenger": false, "": false, "api_keys": true, "token_endpoint": false,
		"cookie_domain": false, "cookieURL.Host": false,
	} {
		if got := credkey.Is(k); got != want {
			t.Errorf("Is(%q) = %v, want %v", k, got, want)
		}
	}
}

// TestLoose: the configuration-file rule takes everything Is takes and more, and still leaves
// ordinary settings alone.
func TestLoose(t *testing.T) {
	for k, want := range map[string]bool{
		"password": true, "DB_PASSWORD": true, "AWS_SECRET_ACCESS_KEY": true, "apiKey": true,
		"client_secret": true, "requirepass": true, "masterauth": true, "ssl_certificate_key": true,
		"Authorization": true, "tokenizer": true, "max_tokens": true, "salt": true, "auth": true,
		"listen": false, "server_name": false, "keepalive_timeout": false, "monkey": false, "dsn": false,
		"hostname": false, "": false,
	} {
		if got := credkey.Loose(k); got != want {
			t.Errorf("Loose(%q) = %v, want %v", k, got, want)
		}
	}
}

func FuzzLooseTakesWhatIsTakes(f *testing.F) {
	for _, k := range []string{"password", "X-API-Key", "token_expiry", "monkey", "aws_secret_access_key"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if credkey.Is(k) && !credkey.Loose(k) {
			t.Fatalf("%q: Is takes it, Loose does not", k)
		}
	})
}

func TestWords(t *testing.T) {
	for k, want := range map[string]string{
		"X-API-Key": "x api key", "apiKey": "api key", "AWS_SECRET_ACCESS_KEY": "aws secret access key",
		"APIKey": "api key", "sha256": "sha256", "ModuleSHA256": "module sha256", "": "",
	} {
		got := credkey.Words(k)
		s := ""
		for i, w := range got {
			if i > 0 {
				s += " "
			}
			s += w
		}
		if s != want {
			t.Errorf("Words(%q) = %q, want %q", k, s, want)
		}
	}
}
