package registry_test

import (
	"crypto"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/proto"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// sigstoreGoVerdict judges a bundle's signature and log entry with sigstore-go's own verifier, called as
// Lexicon's verifier called it before it verified with rekor-tiles' functions directly (registry
// RATIONALE.md, "What the agent links of Sigstore"): the envelope signature against the held key named
// by the hint, then a Rekor v2 entry in one of the held logs, threshold one.
func sigstoreGoVerdict(b *protobundle.Bundle, publisher keys.PublisherPublic, logs []keys.LogPublic) error {
	sb, err := bundle.NewBundle(b)
	if err != nil {
		return err
	}
	v, err := signature.LoadECDSAVerifier(publisher.ECDSA(), crypto.SHA256)
	if err != nil {
		return err
	}
	key := root.NewTrustedPublicKeyMaterialFromMapping(map[string]*root.ExpiringKey{
		publisher.Fingerprint(): root.NewExpiringKey(v, time.Time{}, time.Time{}),
	})
	sig, err := sb.SignatureContent()
	if err != nil {
		return err
	}
	vc, err := sb.VerificationContent()
	if err != nil {
		return err
	}
	if err := sgverify.VerifySignature(sig, vc, key); err != nil {
		return err
	}
	tlogs := map[string]*root.TransparencyLog{}
	for _, l := range logs {
		tlogs[hex.EncodeToString(l.ID())] = &root.TransparencyLog{BaseURL: "https://" + l.Origin(), ID: l.ID(),
			HashFunc: crypto.SHA256, PublicKey: l.Key(), SignatureHashFunc: crypto.SHA256}
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, nil, tlogs)
	if err != nil {
		return err
	}
	_, err = sgverify.VerifyTlogEntry(sb, root.TrustedMaterialCollection{tr, key}, 1, false)
	return err
}

// TestVerifierAgreesWithSigstoreGo: on a logged release and every way of altering its signature or log
// evidence, Lexicon's verifier refuses whatever sigstore-go's verifier refuses, and accepts only what
// sigstore-go accepts. Where Lexicon is stricter (a bundle version, an entry kind or a carried entry body
// that nothing here writes and sigstore-go does not look at), the case says so: it refuses what sigstore-go would let through, never the reverse.
func TestVerifierAgreesWithSigstoreGo(t *testing.T) {
	f := newFixture(t)
	f.addLog(t, f.build(t, 7, nil)) // a tree of more than one entry, so proofs have hashes
	f.addLog(t, f.build(t, 8, nil))
	dir, other := f.build(t, 1, nil), f.build(t, 2, nil)
	f.addLog(t, dir)
	f.addLog(t, other)
	good, spliced := readBundle(t, dir), readBundle(t, other)
	rogue := tlogtest.New("log.lexicon.test") // the same origin under another key
	rogueSrv := rogue.Server()
	defer rogueSrv.Close()
	rogueDir := f.build(t, 1, nil)
	(&fixture{key: f.key, logURL: rogueSrv.URL}).addLog(t, rogueDir)
	unknown := tlogtest.New("other.lexicon.test")
	unknownSrv := unknown.Server()
	defer unknownSrv.Close()
	unknownDir := f.build(t, 1, nil)
	(&fixture{key: f.key, logURL: unknownSrv.URL}).addLog(t, unknownDir)

	entry := func(b *protobundle.Bundle) *protobundle.Bundle { return b }
	cases := []struct {
		name     string
		edit     func(b *protobundle.Bundle) *protobundle.Bundle
		refused  bool
		stricter bool // refused here, accepted by sigstore-go
	}{
		{"as published", entry, false, false},
		{"signature altered", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.GetDsseEnvelope().Signatures[0].Sig[8] ^= 1
			return b
		}, true, false},
		{"payload altered", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.GetDsseEnvelope().Payload[len(b.GetDsseEnvelope().Payload)-2] ^= 1
			return b
		}, true, false},
		{"payload type altered", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.GetDsseEnvelope().PayloadType = "application/json"
			return b
		}, true, false},
		{"key hint of a key not held", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.VerificationMaterial.GetPublicKey().Hint = keys.NewPublisher().Public().Fingerprint()
			return b
		}, true, false},
		{"entry spliced from another statement", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.VerificationMaterial.TlogEntries = spliced.VerificationMaterial.TlogEntries
			return b
		}, true, false},
		{"inclusion proof hash altered", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.VerificationMaterial.TlogEntries[0].InclusionProof.Hashes[0][0] ^= 1
			return b
		}, true, false},
		{"inclusion proof hash dropped", func(b *protobundle.Bundle) *protobundle.Bundle {
			p := b.VerificationMaterial.TlogEntries[0].InclusionProof
			p.Hashes = p.Hashes[1:]
			return b
		}, true, false},
		{"log index moved", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.VerificationMaterial.TlogEntries[0].LogIndex++
			return b
		}, true, false},
		{"checkpoint root altered", func(b *protobundle.Bundle) *protobundle.Bundle {
			cp := b.VerificationMaterial.TlogEntries[0].InclusionProof.Checkpoint
			i := strings.Index(cp.Envelope, "\n") + 1
			i += strings.Index(cp.Envelope[i:], "\n") + 1 // the root hash's first character
			flip := map[byte]string{'A': "B"}[cp.Envelope[i]]
			if flip == "" {
				flip = "A"
			}
			cp.Envelope = cp.Envelope[:i] + flip + cp.Envelope[i+1:]
			return b
		}, true, false},
		{"checkpoint of a rogue key under the held log's id", func(*protobundle.Bundle) *protobundle.Bundle {
			r := readBundle(t, rogueDir)
			r.VerificationMaterial.TlogEntries[0].LogId = &protocommon.LogId{KeyId: f.log.PublicKey().ID()}
			return r
		}, true, false},
		{"entry only in a log whose key is not held", func(*protobundle.Bundle) *protobundle.Bundle { return readBundle(t, unknownDir) }, true, false},
		{"the same entry twice", func(b *protobundle.Bundle) *protobundle.Bundle {
			e := b.VerificationMaterial.TlogEntries[0]
			b.VerificationMaterial.TlogEntries = append(b.VerificationMaterial.TlogEntries, proto.Clone(e).(*protorekor.TransparencyLogEntry))
			return b
		}, true, false},
		{"entry kind changed", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.VerificationMaterial.TlogEntries[0].KindVersion.Kind = "dsse"
			return b
		}, true, true},
		{"inclusion proof removed", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.VerificationMaterial.TlogEntries[0].InclusionProof = nil
			return b
		}, true, false},
		{"no log entry", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.VerificationMaterial.TlogEntries = nil
			return b
		}, true, false},
		{"carried body of another statement", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.VerificationMaterial.TlogEntries[0].CanonicalizedBody = spliced.VerificationMaterial.TlogEntries[0].CanonicalizedBody
			return b
		}, true, true},
		{"bundle version 0.2", func(b *protobundle.Bundle) *protobundle.Bundle {
			b.MediaType = "application/vnd.dev.sigstore.bundle+json;version=0.2"
			return b
		}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.edit(proto.Clone(good).(*protobundle.Bundle))
			data, err := statement.MarshalBundle(b)
			must(t, err)
			tr, err := registry.OpenTrust(f.newTrust(t, true))
			must(t, err)
			_, ours := tr.Verify(data, now)
			theirs := sigstoreGoVerdict(b, f.key.Public(), []keys.LogPublic{f.log.PublicKey()})
			if (ours != nil) != tc.refused {
				t.Fatalf("Lexicon's verifier: %v, want refused %v", ours, tc.refused)
			}
			if ours != nil && errcode.Code(ours) == "" {
				t.Fatalf("refusal without a code: %v", ours)
			}
			if (theirs != nil) != (tc.refused && !tc.stricter) {
				t.Fatalf("sigstore-go's verifier: %v; the case says refused %v, stricter here %v", theirs, tc.refused, tc.stricter)
			}
		})
	}
}
