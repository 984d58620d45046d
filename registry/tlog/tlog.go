// Package tlog adds a release statement's envelope to a Rekor v2 transparency log, with a signed
// timestamp from the RFC 3161 timestamp authority beside it, and reads the log's tiles to prove that two
// of its checkpoints are one history.
//
// Rekor v2 logs a DSSE envelope as a hashedrekord v0.0.2 entry over the SHA-256 of its
// pre-authentication encoding, signed ECDSA P-256, which is what sigstore-go's Rekor v2 client submits;
// the returned entry carries an inclusion proof and a signed checkpoint, which verifiers check offline
// against the log keys they hold.
package tlog

import (
	"context"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
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

// Timestamp asks the RFC 3161 timestamp authority at url (Sigstore's timestamp-authority API) for a
// signed timestamp over the bundle's signature, through sigstore-go's own client, and appends it to the
// bundle. A Rekor v2 entry carries no time: the signed timestamp is what tells standard verifiers when
// the signature existed. The bundle is changed only on success.
func Timestamp(ctx context.Context, url string, b *protobundle.Bundle) error {
	env := b.GetDsseEnvelope()
	if env == nil || len(env.GetSignatures()) != 1 {
		return errcode.New(errcode.StatementMalformed, "the bundle holds no envelope with one signature to timestamp").With(errcode.DetailLayer, "envelope")
	}
	ts, err := sign.NewTimestampAuthority(&sign.TimestampAuthorityOptions{URL: url}).GetTimestamp(ctx, env.GetSignatures()[0].GetSig())
	if err != nil {
		return errcode.Wrap(err, errcode.LogUnavailable, "the timestamp authority at %s did not answer with a timestamp", url)
	}
	vm := b.GetVerificationMaterial()
	if vm.TimestampVerificationData == nil {
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{}
	}
	vm.TimestampVerificationData.Rfc3161Timestamps = append(vm.TimestampVerificationData.Rfc3161Timestamps,
		&protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
	return nil
}
