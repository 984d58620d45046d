package statement_test

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestDecodeStatementLayerIsOpen: what in-toto tells a consumer to ignore is ignored: fields of the
// statement layer it does not define, a subject's annotations and other descriptor fields, and digests
// in other algorithms beside the sha256 that pins the artifact.
func TestDecodeStatementLayerIsOpen(t *testing.T) {
	for name, payload := range map[string]string{
		"subject annotations": strings.Replace(seedPayload, `"digest":`,
			`"annotations":{"buildId":"42","tags":["a"]},"uri":"https://example.test/a","mediaType":"application/wasm","digest":`, 1),
		"a second digest algorithm": strings.Replace(seedPayload, `"digest":{"sha256":"`+zeroDigest+`"}`,
			`"digest":{"sha512":"`+strings.Repeat("ab", 64)+`","sha256":"`+zeroDigest+`","gitCommit":"abc"}`, 1),
		"an extension field at the top level": strings.Replace(seedPayload, `"subject":`, `"x-extension":{"nested":[1,2]},"subject":`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			s, err := statement.Decode([]byte(payload))
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if s.Subject[0].SHA256() != zeroDigest || s.Predicate.Release != "1.0.0" {
				t.Fatalf("decoded %+v", s)
			}
		})
	}
}

// TestDecodeRefusals: the predicate stays closed, the pinning digest stays sha256, and the format
// before this one is told apart from a merely broken statement.
func TestDecodeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, payload, code string
	}{
		{"unknown predicate field", strings.Replace(seedPayload, `"floor":`, `"runFirst":"rm -rf /","floor":`, 1), errcode.StatementMalformed},
		{"snake_case predicate field", strings.Replace(seedPayload, `"issuedAt":`, `"issued_at":`, 1), errcode.StatementMalformed},
		{"repeated key in the statement layer", strings.Replace(seedPayload, `"subject":`, `"x":1,"x":2,"subject":`, 1), errcode.StatementMalformed},
		{"repeated key inside an ignored field", strings.Replace(seedPayload, `"subject":`, `"x":{"a":1,"a":2},"subject":`, 1), errcode.StatementMalformed},
		{"repeated digest", strings.Replace(seedPayload, `"digest":{`, `"digest":{"sha256":"`+zeroDigest+`",`, 1), errcode.StatementMalformed},
		{"no sha256 digest", strings.Replace(seedPayload, `"sha256":`, `"sha512":`, 1), errcode.StatementInvalid},
		{"uppercase sha256 key", strings.Replace(seedPayload, `"sha256":`, `"SHA256":`, 1), errcode.StatementInvalid},
		{"no predicate", seedPayload[:strings.Index(seedPayload, `,"predicate":`)] + "}", errcode.StatementInvalid},
		{"the retired format", retiredPayload, errcode.StatementFormatRetired},
		{"another predicate type", strings.Replace(seedPayload, "release/v2", "release/v3", 1), errcode.StatementInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := statement.Decode([]byte(tc.payload))
			testkit.WantCode(t, err, tc.code)
		})
	}
}
