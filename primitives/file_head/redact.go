package main

import (
	"regexp"
	"strings"
	"unicode"
)

// Redacted is what a secret value becomes.
const Redacted = "[REDACTED]"

// credentialWords are key segments that name a credential. A key is split at _, -, ., spaces and
// camelCase humps; any segment here, any of credentialParts inside the key, or a key ending in one of
// credentialSuffixes makes it a credential. Hiding a harmless setting costs less than leaking a secret.
var credentialWords = map[string]bool{
	"password": true, "passwd": true, "pass": true, "pwd": true, "secret": true, "secrets": true,
	"token": true, "tokens": true, "apikey": true, "credential": true, "credentials": true, "auth": true,
	"authorization": true, "passphrase": true, "key": true, "privatekey": true, "cookie": true,
	"salt": true, "signature": true, "bearer": true, "psk": true, "otp": true,
}

var credentialParts = []string{"password", "passwd", "secret", "token", "apikey", "privatekey", "passphrase", "credential"}

// credentialSuffixes end keys glued without separators, as Redis's requirepass and masterauth are.
var credentialSuffixes = []string{"pass", "pwd", "auth"}

// keyValue matches the shapes configuration takes, capturing the key and everything up to the value:
// `key = v`, `key: v`, `export KEY=v`, `"key": v`, `key v;` (nginx, ssh, postfix).
var keyValue = regexp.MustCompile(`^(\s*(?:export\s+)?["']?([A-Za-z_][A-Za-z0-9_.\-]*)["']?\s*(?:[=:]|\s)\s*)(\S.*)$`)

// urlPassword matches the password of a URL's userinfo: scheme://user:PASSWORD@host.
var urlPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]*:)([^@\s/]+)(@)`)

// redactor redacts line by line, remembering whether it is inside a PEM private key block.
type redactor struct{ inKey bool }

// line returns the line with secrets removed, and whether anything was.
func (r *redactor) line(s string) (string, bool) {
	trimmed := strings.TrimSpace(s)
	if r.inKey {
		if strings.HasPrefix(trimmed, "-----END ") {
			r.inKey = false
			return s, false
		}
		return Redacted, true
	}
	if strings.HasPrefix(trimmed, "-----BEGIN ") && strings.Contains(trimmed, "PRIVATE KEY") {
		r.inKey = true
		return s, false
	}
	if strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, ";") || strings.HasPrefix(trimmed, "//") || trimmed == "" {
		return s, false
	}
	if m := keyValue.FindStringSubmatch(s); m != nil && isCredential(m[2]) {
		return m[1] + Redacted, true
	}
	if out := urlPassword.ReplaceAllString(s, "${1}"+Redacted+"${3}"); out != s {
		return out, true
	}
	return s, false
}

// isCredential reports whether a configuration key names a credential.
func isCredential(key string) bool {
	lower := strings.ToLower(key)
	flat := strings.NewReplacer("_", "", "-", "", ".", "").Replace(lower)
	for _, p := range credentialParts {
		if strings.Contains(flat, p) {
			return true
		}
	}
	for _, s := range credentialSuffixes {
		if strings.HasSuffix(flat, s) {
			return true
		}
	}
	for _, seg := range segments(key) {
		if credentialWords[seg] {
			return true
		}
	}
	return false
}

// segments splits a key at separators and camelCase humps, lowercased.
func segments(key string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	runes := []rune(key)
	for i, c := range runes {
		switch {
		case c == '_' || c == '-' || c == '.' || unicode.IsSpace(c):
			flush()
		case unicode.IsUpper(c) && i > 0 && unicode.IsLower(runes[i-1]):
			flush()
			cur = append(cur, c)
		default:
			cur = append(cur, c)
		}
	}
	flush()
	return out
}
