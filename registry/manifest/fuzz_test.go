package manifest_test

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// FuzzParse holds Parse to its promise on any bytes: no panic, and every refusal carries a manifest code.
func FuzzParse(f *testing.F) {
	f.Add([]byte(goodWord))
	f.Add([]byte(`{"schema": "lexicon/manifest/v1", "kind": "recipe", "recipe": {"scope": "any"}}`))
	f.Add([]byte(`{"params": {"$ref": "#/$defs/x", "$defs": {"x": {"$ref": "#/$defs/x"}}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := manifest.Parse(data)
		if err == nil && len(data) > manifest.MaxSize {
			t.Fatalf("a manifest of %d bytes, over the cap, was accepted", len(data))
		}
		if err != nil {
			switch errcode.Code(err) {
			case errcode.ManifestMalformed, errcode.ManifestUnknownField, errcode.ManifestInvalid,
				errcode.ManifestSchemaInvalid, errcode.ManifestParamsOpen:
			case errcode.StatementTooLarge:
				if len(data) <= manifest.MaxSize {
					t.Fatalf("%d bytes refused as too large: %v", len(data), err)
				}
			default:
				t.Fatalf("uncoded refusal: %v", err)
			}
			return
		}
		_ = m.CheckParams([]byte(`{}`))
		_ = m.SubjectName()
		if decl, err := m.Declaration([]string{"www.example.com"}); err == nil {
			if m.CheckParams(decl) != nil {
				t.Fatalf("a declaration its own schema refuses: %s", decl)
			}
		} else if errcode.Code(err) != errcode.WordParamInvalid {
			t.Fatalf("uncoded declaration refusal: %v", err)
		}
	})
}
