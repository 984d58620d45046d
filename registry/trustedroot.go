package registry

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"time"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	prototrustroot "github.com/sigstore/protobuf-specs/gen/pb-go/trustroot/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TrustedRootFile is the standard Sigstore trusted root in a trust folder, for cosign, sigstore-js and
// sigstore-go. Lexicon's own verifier never reads it: it reads log_keys/, which only the folder's owner
// may write, and keeps its own rules (the log ratchet, key chain, sequence).
const TrustedRootFile = "trusted_root.json"

// TrustedRootMediaType is the trusted-root version written: 0.1, which sigstore-go, cosign and
// sigstore-js all read.
const TrustedRootMediaType = "application/vnd.dev.sigstore.trustedroot+json;version=0.1"

// logKeysSince is the validity start written for every log key. A log key is held here without a
// window, as Lexicon's own verifier holds it, and a Rekor v2 entry carries no time to check one against;
// the format still requires a start.
var logKeysSince = time.Unix(0, 0).UTC()

// TimestampAuthority is an RFC 3161 timestamp authority a trusted root names: its certificate chain,
// leaf first, ending with the certificate trusted as anchor.
type TimestampAuthority struct {
	Chain []*x509.Certificate
}

// ParseTimestampAuthority reads a timestamp authority's chain from PEM, leaf first.
func ParseTimestampAuthority(pemChain []byte) (TimestampAuthority, error) {
	var a TimestampAuthority
	for rest := pemChain; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return a, errcode.New(errcode.KeyMalformed, "a timestamp authority chain holds only CERTIFICATE blocks, not %q", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return a, errcode.Wrap(err, errcode.KeyMalformed, "a timestamp authority certificate does not parse")
		}
		a.Chain = append(a.Chain, c)
	}
	if len(a.Chain) == 0 {
		return a, errcode.New(errcode.KeyMalformed, "the timestamp authority chain holds no certificate")
	}
	return a, nil
}

// TrustedRootJSON is the Sigstore trusted root (media type version 0.1, which sigstore-go, cosign and
// sigstore-js all read) naming the given transparency logs as Rekor v2 logs, base URL https://<origin>
// (the origin their checkpoints carry) and log id the untruncated checkpoint key id, as Rekor v2 sets
// it; and the given timestamp authorities, valid over their leaf certificate's lifetime. A test holds
// what it writes, for every kind of log key, to sigstore-go's own loader.
func TrustedRootJSON(logs []keys.LogPublic, tsas []TimestampAuthority) ([]byte, error) {
	tr := &prototrustroot.TrustedRoot{MediaType: TrustedRootMediaType}
	for _, a := range tsas {
		chain := &protocommon.X509CertificateChain{}
		for _, c := range a.Chain {
			chain.Certificates = append(chain.Certificates, &protocommon.X509Certificate{RawBytes: c.Raw})
		}
		leaf := a.Chain[0]
		tr.TimestampAuthorities = append(tr.TimestampAuthorities, &prototrustroot.CertificateAuthority{
			Subject:   &protocommon.DistinguishedName{Organization: first(leaf.Subject.Organization), CommonName: leaf.Subject.CommonName},
			CertChain: chain,
			ValidFor:  &protocommon.TimeRange{Start: timestamppb.New(leaf.NotBefore), End: timestamppb.New(leaf.NotAfter)},
		})
	}
	for _, l := range logs {
		der, err := x509.MarshalPKIXPublicKey(l.Key())
		if err != nil {
			return nil, errcode.Wrap(err, errcode.KeyMalformed, "log key %s cannot be encoded", l.Origin())
		}
		var details protocommon.PublicKeyDetails
		switch l.Key().(type) {
		case *ecdsa.PublicKey:
			details = protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
		case ed25519.PublicKey:
			details = protocommon.PublicKeyDetails_PKIX_ED25519
		}
		tr.Tlogs = append(tr.Tlogs, &prototrustroot.TransparencyLogInstance{
			BaseUrl:       "https://" + l.Origin(),
			HashAlgorithm: protocommon.HashAlgorithm_SHA2_256,
			PublicKey: &protocommon.PublicKey{
				RawBytes: der, KeyDetails: details,
				ValidFor: &protocommon.TimeRange{Start: timestamppb.New(logKeysSince)},
			},
			LogId:           &protocommon.LogId{KeyId: l.ID()},
			CheckpointKeyId: &protocommon.LogId{KeyId: l.ID()},
		})
	}
	out, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(tr)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "trusted root cannot be encoded")
	}
	return append(out, '\n'), nil
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
