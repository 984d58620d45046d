package statement

import (
	"encoding/json"
	"strconv"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// BundleMediaType is the one Sigstore bundle version a statement travels in, the one sigstore-go's
// signer writes.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// Encode returns the statement's payload bytes.
func Encode(s *Statement) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.StatementInvalid, "statement cannot be encoded")
	}
	return b, nil
}

// PAE is DSSE's pre-authentication encoding of a payload: what the envelope's signature covers, and
// what a Rekor v2 hashedrekord entry records the SHA-256 of.
func PAE(payloadType string, payload []byte) []byte {
	out := make([]byte, 0, len(payloadType)+len(payload)+32)
	out = append(out, "DSSEv1 "...)
	out = strconv.AppendInt(out, int64(len(payloadType)), 10)
	out = append(out, ' ')
	out = append(out, payloadType...)
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(len(payload)), 10)
	out = append(out, ' ')
	return append(out, payload...)
}

// Sign wraps payload in a DSSE envelope signed by key, in a Sigstore bundle v0.3 with no log entry:
// ECDSA P-256 with SHA-256 over the envelope's pre-authentication encoding, the publisher key's
// fingerprint as the bundle's key hint. The bundle is the one sigstore-go's sign.Bundle makes for a
// key pair (a test holds the two to the same bytes); it is built here so that the package nodes link
// to read bundles does not link sigstore-go's signer and its Fulcio, OIDC and Rekor clients.
func Sign(payload []byte, key keys.PublisherPrivate) (*protobundle.Bundle, error) {
	sig, _ := key.Sign(PAE(PayloadType, payload))
	return envelopeBundle(payload, sig, key.Public().Fingerprint()), nil
}

// envelopeBundle is the bundle of one signed envelope, in the shape sigstore-go's sign.Bundle gives it.
func envelopeBundle(payload, sig []byte, hint string) *protobundle.Bundle {
	return &protobundle.Bundle{
		MediaType: BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: hint}},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload:     payload,
			PayloadType: PayloadType,
			Signatures:  []*protodsse.Signature{{Sig: sig}},
		}},
	}
}

// MarshalBundle encodes a bundle as the JSON that lives in statement.bundle.json.
func MarshalBundle(b *protobundle.Bundle) ([]byte, error) {
	out, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(b)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.StatementMalformed, "bundle cannot be encoded")
	}
	return out, nil
}
