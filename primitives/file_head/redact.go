package main

import (
	"regexp"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/credkey"
)

// Redacted is what a secret value becomes.
const Redacted = "[REDACTED]"

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

// isCredential reports whether a configuration key may name a credential: sdk/credkey's loose rule,
// over the same list of words the agent's redaction reads. Hiding a harmless setting costs less than
// leaking a secret.
func isCredential(key string) bool { return credkey.Loose(key) }
