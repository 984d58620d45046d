package provision

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// TokenPrefix starts every provisioning token, so that one found in a log or a paste says what it is.
const TokenPrefix = "lxp_"

// newToken returns a fresh one-time join token: 256 random bits.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// TokenHash is what the store keeps of a token: the lowercase hex sha256 of its text.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// LooksLikeToken reports whether s has a token's form (it may still match nothing).
func LooksLikeToken(s string) bool {
	rest, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok || len(rest) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil
}
