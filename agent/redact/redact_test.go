package redact

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

const (
	hex64  = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	awsKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	jwt    = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)

// TestTextKeeps lists ordinary text the redactor must leave alone.
func TestTextKeeps(t *testing.T) {
	for _, s := range []string{
		"The quick brown fox jumps over the lazy dog.",
		"disk /dev/sda1 is 93% full; load 0.52 0.58 0.59",
		"/usr/lib/x86_64-linux-gnu/libsystemd.so.0.38.0",
		"home/Alice/Documents/Project2024/Reports",
		"/var/lib/docker/overlay2/" + hex64 + "/diff",
		"getty@tty1.service user@1000.service systemd-journald.service",
		`dev-disk-by\x2duuid-3f1c2b9a\x2d1234.device sys-devices-platform-serial8250-tty-ttyS1.device`,
		"2024-01-01T12:00:00.123456789+01:00 and Mon 2024-01-01 12:00:00 UTC at 12:34:56",
		"1.2.3 v2.10.0-rc.1+build.5 6.8.0-45-generic 2:1.2.3-4ubuntu5 go1.26.0",
		"sha256:" + hex64,
		"image@sha256:" + hex64,
		"Content-Digest: sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:",
		"SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",
		"boot id 3f1c2b9a-1234-4c5d-9e8f-0a1b2c3d4e5f",
		"pvc-3f1c2b9a-1234-4c5d-9e8f-0a1b2c3d4e5f nginx-deployment-66b6c48dd5-7xk2p",
		"AbstractSingletonProxyFactoryBean MemoryTotalBytesAvailableForAllocation",
		"ERR_CONNECTION_REFUSED_WHILE_CONNECTING_TO_UPSTREAM_SERVER",
		"github.com/lexicon-fleet/lexicon/registry/httpsig.(*Verifier).Verify",
		"x86_64-pc-linux-gnu-gcc-13-2-0-ubuntu1-22-04",
		"std::vector<int> Foo::Bar",
		"MAC 52:54:00:12:34:56 listening on 0.0.0.0:80, [::]:443, 127.0.0.1:5432 and ::1",
		"netmask 255.255.255.0 broadcast 255.255.255.255",
		"1234567890123456789012345678901234567890",
		"Depends: libpam0g (>= 0.99.7.1), alsa-utils (<< 1.0.24.2-5), libgiac0 (<< 1.2.3.57+dfsg1-2+b4)",
		"Version: 1.2.5.1-2 and version 10.0.0.1",
		"var errEqualNotFoundInHeader = errors.New(x); cookie_domain=example.com token_endpoint=/oauth",
		"if a >= 1.2.3.4 {",
		"RFC 7540, Section 8.1.2.2 and sec. 8.1.2.6 and § 5.1.1.5",
		"func TestH12_HeadContentLengthNoBody(t *testing.T) and http2noDialH2RoundTripper getElementsByTagNameNS",
		"http2cipher_TLS_RSA_WITH_3DES_EDE_CBC_SHA = 0x000A",
		"token_expiry=2024-01-01 password_changed_at: 2024-01-01 max_tokens=100 secret_name: db-creds",
		"private_key_path=/etc/lexicon/node.key public_key: node-key:abc",
		"if token == nil { return }",
		"password:",
		"https://example.com/path?q=1",
		"mailto at example dot com, user @ host",
	} {
		t.Run(s, func(t *testing.T) {
			got, c := Text(s)
			if got != s || c.Total() != 0 {
				t.Fatalf("changed:\n got %q\nfrom %q (%v)", got, s, c)
			}
		})
	}
}

// TestTextRedacts lists what must be redacted, with the exact result and counts.
func TestTextRedacts(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		counts   Counts
	}{
		{"password=hunter2 user=bob", "password=[redacted:credential] user=bob", Counts{Credential: 1}},
		{"export DB_PASSWORD='s3cr3t value'", "export DB_PASSWORD='[redacted:credential]'", Counts{Credential: 1}},
		{"--password=x --verbose", "--password=[redacted:credential] --verbose", Counts{Credential: 1}},
		{`{"api_key": "abc", "n": 1}`, `{"api_key": "[redacted:credential]", "n": 1}`, Counts{Credential: 1}},
		{"X-Api-Key: abc123\nHost: h", "X-Api-Key: [redacted:credential]\nHost: h", Counts{Credential: 1}},
		{"Authorization: Basic dXNlcjpwYXNz  \r\nAccept: */*", "Authorization: [redacted:credential]  \r\nAccept: */*", Counts{Credential: 1}},
		{"Cookie: a=b; session=c", "Cookie: [redacted:credential]", Counts{Credential: 1}},
		{"client_secret=xyz&grant_type=client_credentials", "client_secret=[redacted:credential]&grant_type=client_credentials", Counts{Credential: 1}},
		{"AWS_SECRET_ACCESS_KEY=" + awsKey, "AWS_SECRET_ACCESS_KEY=[redacted:credential]", Counts{Credential: 1}},
		{"apiKey: k1, passwd: k2, authToken: k3", "apiKey: [redacted:credential], passwd: [redacted:credential], authToken: [redacted:credential]", Counts{Credential: 3}},
		{"token := load()", "token := [redacted:credential]()", Counts{Credential: 1}},
		{"mail alice@example.com, Bob.Smith+ops@mail.example.co.uk", "mail …@example.com, …@mail.example.co.uk", Counts{Email: 2}},
		{"josé@example.org", "…@example.org", Counts{Email: 1}},
		{"https://user:pass@example.com/x", "https://…@example.com/x", Counts{Userinfo: 1}},
		{"git clone ssh://git@github.com/o/r", "git clone ssh://…@github.com/o/r", Counts{Userinfo: 1}},
		{"postgres://app:pw@db.internal:5432/app?sslmode=require", "postgres://…@db.internal:5432/app?sslmode=require", Counts{Userinfo: 1}},
		{"from 10.0.0.1:8080 to 192.168.1.1/24.", "from [redacted:ip]:8080 to [redacted:ip]/24.", Counts{IP: 2}},
		{"peer 2001:db8::1 and [fe80::1%eth0]:22 and ::ffff:10.1.2.3", "peer [redacted:ip] and [[redacted:ip]]:22 and [redacted:ip]", Counts{IP: 3}},
		{"dig 8.8.8.8", "dig [redacted:ip]", Counts{IP: 1}},
		{"range 10.0.0.1-10.0.0.9", "range [redacted:ip]-[redacted:ip]", Counts{IP: 2}},
		{"v 1.2.3.4", "v [redacted:ip]", Counts{IP: 1}}, // a four-part version is indistinguishable from an address
		{"hex " + hex64, "hex [redacted:token]", Counts{Token: 1}},
		{"key " + awsKey + " done", "key [redacted:token] done", Counts{Token: 1}},
		{"bearer " + jwt, "bearer [redacted:token]", Counts{Token: 1}},
		{"gh ghp_" + strings.Repeat("aB3x", 9) + " slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
			"gh [redacted:token] slack [redacted:token]", Counts{Token: 2}},
		{"AKIAIOSFODNN7EXAMPLE", "[redacted:token]", Counts{Token: 1}},
		{"k=Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5", "k=[redacted:token]", Counts{Token: 1}},
		{"https://hooks.example.com/services/T0/B0/Xk2pQ9zR7vL3mN8wY4tH6jF1aB5cD0eG", "https://hooks.example.com/services/T0/B0/[redacted:token]", Counts{Token: 1}},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\nok",
			"[redacted:credential]\nok", Counts{Credential: 1}},
		{"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF", "[redacted:credential]", Counts{Credential: 1}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, c := Text(tc.in)
			if got != tc.want {
				t.Fatalf("\n got %q\nwant %q", got, tc.want)
			}
			if !equalCounts(c, tc.counts) {
				t.Fatalf("counts %v, want %v", c, tc.counts)
			}
			again, c2 := Text(got)
			if again != got || c2.Total() != 0 {
				t.Fatalf("not idempotent: %q then %q (%v)", got, again, c2)
			}
		})
	}
}

func equalCounts(a, b Counts) bool {
	for k, n := range a {
		if n != b[k] {
			return false
		}
	}
	for k, n := range b {
		if n != a[k] {
			return false
		}
	}
	return true
}

func TestCredentialKeyNames(t *testing.T) {
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
		if got := isCredentialKey(k); got != want {
			t.Errorf("isCredentialKey(%q) = %v, want %v", k, got, want)
		}
	}
	for k, want := range map[string]bool{
		"sha256": true, "digest": true, "image_digest": true, "checksum": true, "ModuleSHA256": true,
		"fingerprint": true, "commit": true, "id": false, "container_id": false, "token": false,
	} {
		if got := isDigestKey(k); got != want {
			t.Errorf("isDigestKey(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestJSONKeepsStructure(t *testing.T) {
	// Key order, duplicate keys, whitespace, number spellings and escapes in untouched strings all
	// survive byte for byte.
	in := "{\n  \"z\": 1.0e10, \"a\": [true, false, null, -0.5],\n\t\"a\": \"caf\\u00e9 \\\"q\\\" <b>\",\n  \"host\": \"10.0.0.7\", \"e\": {}, \"l\": []\n}"
	want := "{\n  \"z\": 1.0e10, \"a\": [true, false, null, -0.5],\n\t\"a\": \"caf\\u00e9 \\\"q\\\" <b>\",\n  \"host\": \"[redacted:ip]\", \"e\": {}, \"l\": []\n}"
	got, c, err := JSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	if !equalCounts(c, Counts{IP: 1}) {
		t.Fatalf("counts %v", c)
	}
}

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		counts         Counts
	}{
		{"credential keys keep the key",
			`{"user":"bob","password":"hunter2","db":{"DB_PASSWORD":"x","port":5432},"apiKey":"","token_expiry":"2026-01-01"}`,
			`{"user":"bob","password":"[redacted:credential]","db":{"DB_PASSWORD":"[redacted:credential]","port":5432},"apiKey":"","token_expiry":"2026-01-01"}`,
			Counts{Credential: 2}},
		{"everything under a credential key",
			`{"credentials":{"user":"bob","pin":1234,"nested":["a",{"b":"c"}]},"api_keys":["k1","k2"]}`,
			`{"credentials":{"user":"[redacted:credential]","pin":1234,"nested":["[redacted:credential]",{"b":"[redacted:credential]"}]},"api_keys":["[redacted:credential]","[redacted:credential]"]}`,
			Counts{Credential: 5}},
		{"digest fields keep digests, other fields do not",
			`{"sha256":"` + hex64 + `","image_digest":"sha256:` + hex64 + `","checksums":{"a.txt":"` + hex64 + `"},"container_id":"` + hex64 + `"}`,
			`{"sha256":"` + hex64 + `","image_digest":"sha256:` + hex64 + `","checksums":{"a.txt":"` + hex64 + `"},"container_id":"[redacted:token]"}`,
			Counts{Token: 1}},
		{"digest fields still lose addresses",
			`{"digest":"` + hex64 + ` from 10.1.1.1"}`,
			`{"digest":"` + hex64 + ` from [redacted:ip]"}`,
			Counts{IP: 1}},
		{"free text in values",
			`{"lines":["login alice@example.com from 203.0.113.9","curl -H 'Authorization: Bearer x' https://u:p@h/"]}`,
			`{"lines":["login …@example.com from [redacted:ip]","curl -H 'Authorization: [redacted:credential]' https://…@h/"]}`,
			Counts{Email: 1, IP: 1, Credential: 1, Userinfo: 1}},
		{"keys are never rewritten",
			`{"10.0.0.1":"up","alice@example.com":1}`,
			`{"10.0.0.1":"up","alice@example.com":1}`,
			Counts{}},
		{"a top-level string", `"mail bob@example.net"`, `"mail …@example.net"`, Counts{Email: 1}},
		{"a top-level number", ` 42 `, ` 42 `, Counts{}},
		{"re-encoding keeps HTML and unicode as they are",
			`{"m":"<a href=\"x\">\u00e9</a> 198.51.100.1"}`,
			`{"m":"<a href=\"x\">é</a> [redacted:ip]"}`,
			Counts{IP: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, c, err := JSON([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("\n got %s\nwant %s", got, tc.want)
			}
			if !equalCounts(c, tc.counts) {
				t.Fatalf("counts %v, want %v", c, tc.counts)
			}
			again, c2, err := JSON(got)
			if err != nil || string(again) != string(got) || c2.Total() != 0 {
				t.Fatalf("not idempotent: %s then %s (%v, %v)", got, again, c2, err)
			}
		})
	}
}

func TestJSONRefusesInvalid(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a":1,}`, `[1 2]`, `"\x"`, `{} {}`} {
		out, c, err := JSON([]byte(in))
		if errcode.Code(err) != errcode.WordOutputInvalid || out != nil || c != nil {
			t.Errorf("JSON(%q) = %q, %v, %v", in, out, c, err)
		}
	}
}
