package redact

import "github.com/lexicon-fleet/lexicon/sdk/credkey"

// The credential words themselves are sdk/credkey's, shared with the words that read configuration
// files; what is here is redaction's own: which credential keys run to the end of a line, and which
// keys promise a digest.
var (
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

// isCredentialKey reports whether a key names a credential, so that its value is replaced whole
// (credkey.Is: db_password, X-API-Key and auth_token do; token_expiry, secret_name and key do not).
func isCredentialKey(k string) bool { return credkey.Is(k) }

// isLineKey reports whether a credential key's value, in free text, runs to the end of the line.
func isLineKey(k string) bool {
	w := credkey.Words(k)
	n := len(w)
	return n > 0 && (lineWords[w[n-1]] || n >= 2 && lineWords[w[n-2]+w[n-1]])
}

// isDigestKey reports whether a key promises a digest (sha256, image_digest, checksum, commit).
func isDigestKey(k string) bool {
	w := credkey.Words(k)
	return len(w) > 0 && digestWords[w[len(w)-1]]
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isAlpha(c byte) bool { return isLower(c) || isUpper(c) }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
