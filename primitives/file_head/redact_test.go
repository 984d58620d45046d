package main

import "testing"

func TestRedactLines(t *testing.T) {
	cases := []struct{ in, want string }{
		{"password = hunter2", "password = [REDACTED]"},
		{"DB_PASSWORD=s3cr3t", "DB_PASSWORD=[REDACTED]"},
		{"export AWS_SECRET_ACCESS_KEY=abc", "export AWS_SECRET_ACCESS_KEY=[REDACTED]"},
		{`  "apiKey": "abc123",`, `  "apiKey": [REDACTED]`},
		{"client_secret: xyz", "client_secret: [REDACTED]"},
		{"requirepass foobared", "requirepass [REDACTED]"},
		{"ssl_certificate_key /etc/ssl/private/site.key;", "ssl_certificate_key [REDACTED]"},
		{"Authorization: Bearer abc", "Authorization: [REDACTED]"},
		{"dsn = postgres://app:pw123@db:5432/app", "dsn = postgres://app:[REDACTED]@db:5432/app"},
		{"listen 80;", "listen 80;"},
		{"server_name example.com www.example.com;", "server_name example.com www.example.com;"},
		{"keepalive_timeout 65;", "keepalive_timeout 65;"},
		{"# password = not a value, a comment", "# password = not a value, a comment"},
		{"monkey = banana", "monkey = banana"},
		{"masterauth foobared", "masterauth [REDACTED]"},
		{"tokenizer = simple", "[tokenizer is a credential?]"},
	}
	for _, tc := range cases {
		var r redactor
		got, _ := r.line(tc.in)
		if tc.want == "[tokenizer is a credential?]" {
			// A key containing a credential word is redacted even when it is not one: leaking a secret
			// costs more than hiding a setting.
			tc.want = "tokenizer = [REDACTED]"
		}
		if got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactPrivateKeyBlock(t *testing.T) {
	var r redactor
	lines := []string{"-----BEGIN RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA", "abcd", "-----END RSA PRIVATE KEY-----", "after"}
	want := []string{"-----BEGIN RSA PRIVATE KEY-----", Redacted, Redacted, "-----END RSA PRIVATE KEY-----", "after"}
	for i, l := range lines {
		if got, _ := r.line(l); got != want[i] {
			t.Fatalf("line %d: %q", i, got)
		}
	}
}

func FuzzRedactNeverKeepsACredentialValue(f *testing.F) {
	f.Add("password", "hunter2")
	f.Add("api_token", "x y z")
	f.Fuzz(func(t *testing.T, key, value string) {
		if !isCredential(key) || value == "" || key == "" {
			return
		}
		var r redactor
		line := key + " = " + value
		got, _ := r.line(line)
		if keyValue.MatchString(line) && got == line {
			t.Fatalf("credential line kept: %q", line)
		}
	})
}
