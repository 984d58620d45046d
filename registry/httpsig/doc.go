// Package httpsig signs and verifies agent channel requests: RFC 9421 HTTP Message Signatures over
// ed25519 node keys, with an RFC 9530 Content-Digest of the body.
//
// # Wire format
//
// Every agent request after join carries three header fields, each on exactly one field line:
//
//	Content-Digest: sha-256=:<base64 of sha256(body)>:
//	Signature-Input: sig1=("@method" "@target-uri" "content-digest");created=<unix seconds>;nonce="<nonce>";keyid="<keyid>";alg="ed25519"
//	Signature: sig1=:<base64 of the 64-byte ed25519 signature>:
//
// The values are RFC 8941 structured fields (a dictionary each). Base64 is the standard alphabet with
// padding. Content-Digest is always present, also for an empty body, where it is the sha-256 of zero
// bytes (sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:).
//
// The signature covers exactly three components:
//
//   - "@method": the request method, as sent (POST).
//   - "@target-uri": the absolute target URI: scheme, "://", authority, then path and query exactly
//     as on the request line (https://plane.example.com/api/v1/agent/claim). The scheme and host are
//     lowercased and the scheme's default port (443, 80) is dropped, on both sides.
//   - "content-digest": the Content-Digest field value.
//
// and exactly four parameters, written in this order and accepted in any order:
//
//   - created: the signing time, integer seconds since the Unix epoch.
//   - nonce: 16 random bytes in unpadded base64url (22 characters); the verifier takes 22 to 128
//     characters of that alphabet.
//   - keyid: the node key's OpenSSH SHA256 fingerprint ("SHA256:" and unpadded base64 of the SSH wire
//     form of the key), the text the agent prints at join and the admin compares (see KeyID).
//   - alg: "ed25519" (RFC 9421 section 3.3.6: pure Ed25519 over the signature base, no prehash).
//
// The signature base is RFC 9421 section 2.5's, one line per component and the parameters last,
// joined by LF with no final LF:
//
//	"@method": POST
//	"@target-uri": https://plane.example.com/api/v1/agent/claim
//	"content-digest": sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:
//	"@signature-params": ("@method" "@target-uri" "content-digest");created=1767225600;nonce="kZ0u3Yc1TzqSx6m4rN2bWg";keyid="SHA256:...";alg="ed25519"
//
// The verifier rebuilds @signature-params by serialising the Signature-Input member it parsed (RFC
// 8941 section 4.1), so it signs what it checks, never raw text it did not understand.
//
// # Verification
//
// A Verifier refuses, with these codes (see Verifier.Verify for the order):
// channel.unsigned (no signature at all), channel.signature_invalid (anything about the signature:
// syntax, repeated or oversized fields, more than one signature, other covered components or
// parameters, another alg, an unknown keyid, a signature that does not verify),
// channel.clock_skew (created more than MaxSkew, 5 minutes, from the plane's clock, either way),
// channel.digest_mismatch (Content-Digest missing, not sha-256 alone, or not the body's digest) and
// channel.replayed (the nonce was already used with that keyid). A nonce is remembered until created
// plus MaxSkew plus a minute, after which created alone refuses the request.
//
// Parsing is stricter than RFC 8941 where leniency could let two readers disagree: a repeated
// dictionary or parameter key is refused (RFC 8941 keeps the last), a header on several field lines
// is refused, field values are capped at 4096 bytes, decimals are refused, and byte sequences must be
// canonical.
//
// Behind a proxy the verifier cannot see the URL the agent dialled; set Verifier.Base to the plane's
// external URL and @target-uri is rebuilt from it and the request line (r.RequestURI, which no handler
// rewrites), so a prefix the proxy strips is restored from Base's path.
//
// # Use
//
// On the agent:
//
//	s := httpsig.NewSigner(nodeKey, nil)
//	client := &http.Client{
//		Transport:     s.Transport(nil),
//		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
//	}
//
// On the plane, after reading the body under its cap:
//
//	v := &httpsig.Verifier{Base: external, Keys: lookup, Nonces: store}
//	proof, err := v.Verify(r, body, time.Now())
//	// route by proof.KeyID, never by anything the body claims
package httpsig
