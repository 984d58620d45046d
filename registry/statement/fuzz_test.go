package statement_test

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

const seedPayload = `{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"word/a@1.0.0.wasm","digest":{"sha256":"` +
	`0000000000000000000000000000000000000000000000000000000000000000"}}],"predicateType":"https://lexicon-fleet.github.io/release/v1",` +
	`"predicate":{"release":"1.0.0","sequence":1,"issued_at":"2026-01-01T00:00:00Z","expires_at":"2027-01-01T00:00:00Z",` +
	`"source_commit":"","floor":"","publisher":"publisher-key:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","modules":[],"key_chain":[]}}`

// FuzzDecode: any payload is decoded or refused with a statement code, never a panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(seedPayload))
	f.Add([]byte(`{"_type":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := statement.Decode(data)
		if err == nil {
			return
		}
		switch errcode.Code(err) {
		case errcode.StatementMalformed, errcode.StatementInvalid, errcode.StatementSubjectDuplicate,
			errcode.StatementTooLarge, errcode.ModuleNotPinned:
		default:
			t.Fatalf("uncoded refusal: %v", err)
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
