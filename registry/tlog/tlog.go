// Package tlog adds a release statement's envelope to a Rekor v2 transparency log.
//
// Rekor v2 logs a DSSE envelope as a hashedrekord v0.0.2 entry over the SHA-256 of its
// pre-authentication encoding, signed ECDSA P-256, which is what sigstore-go's Rekor v2 client submits;
// the returned entry carries an inclusion proof and a signed checkpoint, which verifiers check offline
// against the log keys they hold.
package tlog

import (
	"context"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Add submits the bundle's envelope to the Rekor v2 log at url and appends the entry to the bundle.
// The bundle is changed only on success. ctx bounds the whole exchange.
func Add(ctx context.Context, url string, b *protobundle.Bundle, publisher keys.PublisherPublic) error {
	pem := publisher.PEM()
	if pem == nil {
		return errcode.New(errcode.KeyMalformed, "publisher key cannot be encoded")
	}
	rekor := sign.NewRekor(&sign.RekorOptions{BaseURL: url, Version: 2})
	scratch := &protobundle.Bundle{
		MediaType:            b.MediaType,
		Content:              b.Content,
		VerificationMaterial: &protobundle.VerificationMaterial{Content: b.VerificationMaterial.Content},
	}
	if err := rekor.GetTransparencyLogEntry(ctx, pem, scratch); err != nil {
		return errcode.Wrap(err, errcode.LogUnavailable, "the log at %s did not accept the statement", url)
	}
	b.VerificationMaterial.TlogEntries = append(b.VerificationMaterial.TlogEntries, scratch.VerificationMaterial.TlogEntries...)
	return nil
}
