package redact

import "strings"

// keyWords splits a key or field name into lowercase words at separators and camelCase boundaries:
// "X-API-Key" and "apiKey" are [x api key] and [api key]; "AWS_SECRET_ACCESS_KEY" is
// [aws secret access key]. Letters and digits stay together, so "sha256" is one word.
func keyWords(k string) []string {
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

// credWords name a credential wherever they stand in a key (db_password, secret_key_base); headWords
// only as its last word (auth_token, Set-Cookie, but not token_endpoint or cookie_domain); credPairs
// as two adjacent words, anywhere.
var (
	credWords = set("password", "passwords", "passwd", "passphrase", "passcode", "secret", "apikey",
		"accesskey", "privatekey", "privkey", "secretkey", "psk")
	headWords = set("token", "pwd", "credential", "credentials", "cookie", "cookies", "authorization",
		"bearer", "sessionid")
	credPairs = set("apikey", "accesskey", "privatekey", "secretkey", "signingkey", "encryptionkey",
		"masterkey", "authkey", "sessionkey", "accountkey", "sharedkey", "sessionid", "setcookie",
		"apikeys", "accesskeys", "privatekeys", "secretkeys")
	// metaWords, as a key's last word, make it describe a credential rather than hold one:
	// token_expiry, password_changed_at, secret_name, token_type, password_file.
	metaWords = set("at", "time", "date", "age", "expires", "expiry", "expiration", "ttl", "policy",
		"length", "len", "required", "set", "changed", "updated", "created", "enabled", "count",
		"status", "file", "path", "dir", "name", "names", "id", "type", "kind", "url", "uri",
		"endpoint", "min", "max", "hint", "rotation", "version", "ref", "source", "format", "algorithm",
		"used", "remaining", "limit", "present", "exists", "valid", "method", "scheme")
	// lineWords name header-like keys whose value runs to the end of the line (Authorization: Bearer x,
	// Cookie: a=b; c=d).
	lineWords = set("authorization", "cookie", "cookies", "setcookie")
	// digestWords, as a key's last word, promise a content digest: a hex or base64 run in such a field
	// is a hash of something, not a secret.
	digestWords = set("digest", "digests", "sha", "sha1", "sha224", "sha256", "sha384", "sha512", "md5",
		"hash", "hashes", "checksum", "checksums", "fingerprint", "fingerprints", "etag", "commit",
		"revision", "oid", "integrity")
)

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// isCredentialKey reports whether a key names a credential, so that its value is replaced whole.
// The rule: its last word (or last two words) is a credential noun; or, unless its last word is a
// meta word, another word (or adjacent pair) is one of credWords or credPairs. So db_password,
// X-API-Key, client_secret, aws_secret_access_key, password_hash and auth_token hold credentials,
// while token_expiry, token_endpoint, cookie_domain, password_changed_at, secret_name, max_tokens and
// key do not.
func isCredentialKey(k string) bool {
	w := keyWords(k)
	n := len(w)
	if n == 0 {
		return false
	}
	if credWords[w[n-1]] || headWords[w[n-1]] || n >= 2 && credPairs[w[n-2]+w[n-1]] {
		return true
	}
	if metaWords[w[n-1]] {
		return false
	}
	for i := range w {
		if credWords[w[i]] || i > 0 && credPairs[w[i-1]+w[i]] {
			return true
		}
	}
	return false
}

// isLineKey reports whether a credential key's value, in free text, runs to the end of the line.
func isLineKey(k string) bool {
	w := keyWords(k)
	n := len(w)
	return n > 0 && (lineWords[w[n-1]] || n >= 2 && lineWords[w[n-2]+w[n-1]])
}

// isDigestKey reports whether a key promises a digest (sha256, image_digest, checksum, commit).
func isDigestKey(k string) bool {
	w := keyWords(k)
	return len(w) > 0 && digestWords[w[len(w)-1]]
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isAlpha(c byte) bool { return isLower(c) || isUpper(c) }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
