package wasm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
)

var refParams = map[string]any{
	"params": json.RawMessage(`{"type": "object", "additionalProperties": false,
		"properties": {"name": {"type": "string"}, "count": {"type": "integer"}, "hold_ms": {"type": "integer"}},
		"required": ["name"]}`),
	"output": json.RawMessage(`{"type": "object", "required": ["greeting", "count"],
		"properties": {"greeting": {"type": "string"}, "count": {"type": "integer"}}}`),
}

func TestRunReference(t *testing.T) {
	isolations(t, func(t *testing.T, iso wasm.Isolation) {
		module, digest := testWord(t, "ref")
		h := newHost(t, cached(wasm.Config{Isolation: iso}))
		mod := load(t, h, wordManifest(t, "ref", refParams), module, digest)
		for i := range 3 {
			res := mod.Run(context.Background(), []byte(`{"name": "node", "count": 41}`))
			if res.Outcome != wasm.Completed {
				t.Fatalf("run %d: %s %s: %s\n%s", i, res.Outcome, res.Code, res.Message, res.Transcript)
			}
			var out struct {
				Greeting string
				Count    int
			}
			if err := json.Unmarshal(res.Output, &out); err != nil || out.Greeting != "hello node" || out.Count != 42 {
				t.Fatalf("output %s (%v)", res.Output, err)
			}
		}
	})
}
