package registry

import (
	"crypto/sha256"
	"encoding/base64"

	"github.com/transparency-dev/merkle/rfc6962"
)

// rekorV2Entry is the body a Rekor v2 log stores for a statement's envelope, rebuilt from the bundle:
// a hashedrekord v0.0.2 entry over the SHA-256 of the envelope's pre-authentication encoding, with the
// envelope's signature and the publisher key (PKIX DER, ECDSA P-256 with SHA-256). It is the
// RFC 8785 canonical JSON of the protobuf JSON of rekor-tiles' Entry, which is what the log hashes
// into its tree; only the signature and key vary, and neither encodes to a character that JSON
// escapes, so it is written out directly. A test holds it to rekor-tiles' own hashedrekord.ToEntryHash.
//
// The log's proof is checked against this rebuilt entry, never against the body the bundle carries: the
// entry is bound to this envelope because it is made from it.
func rekorV2Entry(paeDigest [sha256.Size]byte, sig, publisherDER []byte) []byte {
	b64 := base64.StdEncoding.EncodeToString
	return []byte(`{"apiVersion":"0.0.2","kind":"hashedrekord","spec":{"hashedRekordV002":{` +
		`"data":{"algorithm":"SHA2_256","digest":"` + b64(paeDigest[:]) + `"},` +
		`"signature":{"content":"` + b64(sig) + `","verifier":{"keyDetails":"PKIX_ECDSA_P256_SHA_256",` +
		`"publicKey":{"rawBytes":"` + b64(publisherDER) + `"}}}}}}`)
}

// rekorV2LeafHash is the RFC 6962 leaf hash of an entry body: what an inclusion proof proves.
func rekorV2LeafHash(body []byte) []byte { return rfc6962.DefaultHasher.HashLeaf(body) }
