// Package credkey is Lexicon's one list of the words that make a key or field name a credential's,
// with the two rules that read it: Is, which the agent's redaction applies to every output and
// message, and Loose, which a word reading configuration files applies, where hiding a setting costs
// less than leaking a secret. It imports only the standard library, so words (wasip1) use it as the
// agent does.
package credkey

import "strings"

// The list. nouns name a credential wherever they stand in a key (db_password, secret_key_base);
// lastNouns only as its last word (auth_token, Set-Cookie, but not token_endpoint or cookie_domain);
// pairs as two adjacent words, anywhere (api_key, aws_secret_access_key).
var (
	nouns = set("password", "passwords", "passwd", "passphrase", "passcode", "secret", "secrets", "apikey",
		"accesskey", "privatekey", "privkey", "secretkey", "psk")
	lastNouns = set("token", "pwd", "credential", "credentials", "cookie", "cookies", "authorization",
		"bearer", "sessionid")
	pairs = set("apikey", "accesskey", "privatekey", "secretkey", "signingkey", "encryptionkey",
		"masterkey", "authkey", "sessionkey", "accountkey", "sharedkey", "sessionid", "setcookie",
		"apikeys", "accesskeys", "privatekeys", "secretkeys")
	// metaWords, as a key's last word, make it describe a credential rather than hold one:
	// token_expiry, password_changed_at, secret_name, token_type, password_file.
	metaWords = set("at", "time", "date", "age", "expires", "expiry", "expiration", "ttl", "policy",
		"length", "len", "required", "set", "changed", "updated", "created", "enabled", "count",
		"status", "file", "path", "dir", "name", "names", "id", "type", "kind", "url", "uri",
		"endpoint", "min", "max", "hint", "rotation", "version", "ref", "source", "format", "algorithm",
		"used", "remaining", "limit", "present", "exists", "valid", "method", "scheme")
	// looseWords are what configuration files also call their secrets, too common in other names for
	// Is (key, auth, salt): Loose takes them as any word of the key.
	looseWords = set("key", "auth", "pass", "salt", "signature", "otp")
	// looseSuffixes end keys glued without separators, as Redis's requirepass and masterauth are.
	looseSuffixes = []string{"pass", "pwd", "auth"}
)

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// Is reports whether a key names a credential, so that its value is replaced whole. The rule: its last
// word (or last two words) is a credential noun; or, unless its last word is a meta word, another word
// (or adjacent pair) is one of nouns or pairs. So db_password, X-API-Key, client_secret,
// aws_secret_access_key, password_hash and auth_token hold credentials, while token_expiry,
// token_endpoint, cookie_domain, password_changed_at, secret_name, max_tokens and key do not.
func Is(k string) bool {
	w := Words(k)
	n := len(w)
	if n == 0 {
		return false
	}
	if nouns[w[n-1]] || lastNouns[w[n-1]] || n >= 2 && pairs[w[n-2]+w[n-1]] {
		return true
	}
	if metaWords[w[n-1]] {
		return false
	}
	for i := range w {
		if nouns[w[i]] || i > 0 && pairs[w[i-1]+w[i]] {
			return true
		}
	}
	return false
}

// Loose reports whether a configuration key may name a credential: whatever Is takes; a key with any
// of the nouns inside it, separators removed (tokenizer, passwordless); any word of it one of the
// loose words (ssl_certificate_key, auth); or a key ending in a glued suffix (requirepass,
// masterauth). It over-redacts by design.
func Loose(k string) bool {
	if Is(k) {
		return true
	}
	w := Words(k)
	flat := strings.Join(w, "")
	for noun := range nouns {
		if strings.Contains(flat, noun) {
			return true
		}
	}
	for noun := range lastNouns {
		if strings.Contains(flat, noun) {
			return true
		}
	}
	for _, s := range looseSuffixes {
		if strings.HasSuffix(flat, s) {
			return true
		}
	}
	for _, x := range w {
		if looseWords[x] {
			return true
		}
	}
	return false
}

// Words splits a key or field name into lowercase words at anything but an ASCII letter or digit and
// at camelCase boundaries: "X-API-Key" and "apiKey" are [x api key] and [api key];
// "AWS_SECRET_ACCESS_KEY" is [aws secret access key]. Letters and digits stay together, so "sha256"
// is one word.
func Words(k string) []string {
	var words []string
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !isAlnum(c) {
			flush()
			continue
		}
		if len(cur) > 0 && isUpper(c) {
			prev := cur[len(cur)-1]
			// fooBar | APIKey (the K starts a word when a lowercase letter follows)
			if isLower(prev) || isDigit(prev) || (isUpper(prev) && i+1 < len(k) && isLower(k[i+1])) {
				flush()
			}
		}
		cur = append(cur, c)
	}
	flush()
	return words
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isLower(c) || isUpper(c) || isDigit(c) }
