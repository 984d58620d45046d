package statement

import (
	"context"
	"crypto"
	"encoding/json"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Encode returns the statement's payload bytes.
func Encode(s *Statement) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.StatementInvalid, "statement cannot be encoded")
	}
	return b, nil
}

// Sign wraps payload in a DSSE envelope signed by key, in a Sigstore bundle v0.3 with no log entry.
func Sign(payload []byte, key keys.PublisherPrivate) (*protobundle.Bundle, error) {
	b, err := sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: PayloadType}, Keypair(key), sign.BundleOptions{})
	if err != nil {
		return nil, errcode.Wrap(err, errcode.StatementInvalid, "cannot sign the statement")
	}
	return b, nil
}

// MarshalBundle encodes a bundle as the JSON that lives in statement.bundle.json.
func MarshalBundle(b *protobundle.Bundle) ([]byte, error) {
	out, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(b)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.StatementMalformed, "bundle cannot be encoded")
	}
	return out, nil
}

// Keypair adapts a publisher key to sigstore-go's signing interface: ECDSA P-256 with SHA-256, which
// sigstore-go's Rekor v2 client logs as a hashedrekord over the SHA-256 of the envelope's
// pre-authentication encoding.
func Keypair(k keys.PublisherPrivate) sign.Keypair { return keypair{k} }

type keypair struct{ k keys.PublisherPrivate }

func (p keypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	return protocommon.HashAlgorithm_SHA2_256
}

func (p keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
}

// GetHint names the key in the bundle; verifiers look the key up by it among the keys they hold.
func (p keypair) GetHint() []byte                { return []byte(p.k.Public().Fingerprint()) }
func (p keypair) GetKeyAlgorithm() string        { return "ECDSA" }
func (p keypair) GetPublicKey() crypto.PublicKey { return p.k.Public().ECDSA() }

func (p keypair) GetPublicKeyPem() (string, error) {
	return string(p.k.Public().PEM()), nil
}

func (p keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	sig, digest := p.k.Sign(data)
	return sig, digest, nil
}

var _ sign.Keypair = keypair{}
