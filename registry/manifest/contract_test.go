package manifest_test

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func TestContract(t *testing.T) {
	old := mustParse(t, goodWord)
	cases := []struct {
		name, from, to string
		field          string // "" means the contract holds
	}{
		{"same", "", "", ""},
		{"new version, same contract", `"version": "1.0.0"`, `"version": "1.1.0"`, ""},
		{"output gains a field", `"truncated": {"type": "boolean"}`, `"truncated": {"type": "boolean"}, "scanned": {"type": "integer"}`, ""},
		{"param removed", `"root": {"type": "string"}, `, ``, "params.root"},
		{"param type changed", `"top": {"type": "integer", "minimum": 1, "maximum": 50}`, `"top": {"type": "string"}`, "params.top"},
		{"param added", `"root": {"type": "string"}, `, `"root": {"type": "string"}, "depth": {"type": "integer"}, `, "params.depth"},
		{"param made required", `"required": ["root"]},`, `"required": ["root", "top"]},`, "params.required"},
		{"output field removed", `, "truncated": {"type": "boolean"}`, ``, "output.truncated"},
		{"output field redefined", `"truncated": {"type": "boolean"}`, `"truncated": {"type": "string"}`, "output.truncated"},
		{"output field no longer required", `"required": ["entries"]}`, `"required": []}`, "output.entries"},
		{"class raised", `"class": "look"`, `"class": "destructive"`, "class"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(goodWord, tc.from, tc.to, 1)
			if tc.from != "" && src == goodWord {
				t.Fatalf("replacement %q did not apply", tc.from)
			}
			err := manifest.CheckContract(old, mustParse(t, src))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("contract should hold: %v", err)
				}
				return
			}
			if errcode.Code(err) != errcode.ContractBroken {
				t.Fatalf("err = %v, want contract.broken", err)
			}
			e := errcode.From(err, "")
			if e.Details["word"] != "disk_usage" || e.Details["field"] != tc.field {
				t.Fatalf("details = %v, want word disk_usage field %s", e.Details, tc.field)
			}
		})
	}
}
