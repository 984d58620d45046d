package statement_test

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

const zeroDigest = "0000000000000000000000000000000000000000000000000000000000000000"

// seedPayload is a minimal statement of today's format; its publisher is a P-256 point (the base point).
const seedPayload = `{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"word/a@1.0.0.wasm","digest":{"sha256":"` +
	zeroDigest + `"}}],"predicateType":"https://lexicon-fleet.github.io/release/v2",` +
	`"predicate":{"release":"1.0.0","sequence":1,"issuedAt":"2026-01-01T00:00:00Z","expiresAt":"2027-01-01T00:00:00Z",` +
	`"sourceCommit":"","floor":"","publisher":"publisher-key:A2sX0fLhLEJH-Lzm5WOkQPJ3A32BLeszoPShOUXYmMKW","modules":[],"keyChain":[]}}`

// retiredPayload is the same statement in the format before (release/v1, snake_case).
const retiredPayload = `{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"word/a@1.0.0.wasm","digest":{"sha256":"` +
	zeroDigest + `"}}],"predicateType":"https://lexicon-fleet.github.io/release/v1",` +
	`"predicate":{"release":"1.0.0","sequence":1,"issued_at":"2026-01-01T00:00:00Z","expires_at":"2027-01-01T00:00:00Z",` +
	`"source_commit":"","floor":"","publisher":"publisher-key:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","modules":[],"key_chain":[]}}`

// FuzzDecode: any payload is decoded or refused with a statement code, never a panic. What decodes is
// held to the rules Decode promises: sha256-pinned unique subjects and today's predicate type.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(seedPayload))
	f.Add([]byte(retiredPayload))
	f.Add([]byte(strings.Replace(seedPayload, `"digest":{"sha256"`, `"annotations":{"k":[1]},"digest":{"sha512":"ab","sha256"`, 1)))
	f.Add([]byte(strings.Replace(seedPayload, `"subject":`, `"extension":{"x":1},"subject":`, 1)))
	f.Add([]byte(strings.Replace(seedPayload, `"floor":`, `"floor":"","floor":`, 1)))
	f.Add([]byte(`{"_type":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := statement.Decode(data)
		if err != nil {
			switch errcode.Code(err) {
			case errcode.StatementMalformed, errcode.StatementInvalid, errcode.StatementSubjectDuplicate,
				errcode.StatementTooLarge, errcode.ModuleNotPinned, errcode.StatementFormatRetired:
			default:
				t.Fatalf("uncoded refusal: %v", err)
			}
			return
		}
		if s.PredicateType != statement.PredicateType || len(s.Subject) == 0 {
			t.Fatalf("decoded a statement of type %q with %d subjects", s.PredicateType, len(s.Subject))
		}
		seen := map[string]bool{}
		for _, sub := range s.Subject {
			if len(sub.SHA256()) != 64 || seen[sub.Name] {
				t.Fatalf("decoded subject %q with digest %q (seen before: %v)", sub.Name, sub.SHA256(), seen[sub.Name])
			}
			seen[sub.Name] = true
		}
	})
}

// FuzzParseBundle: any bundle bytes are parsed or refused with a code.
func FuzzParseBundle(f *testing.F) {
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"x"}},` +
		`"dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"AA=="}]}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := statement.ParseBundle(data)
		if err != nil && errcode.Code(err) == "" {
			t.Fatalf("uncoded refusal: %v", err)
		}
	})
}
