package wasm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

var probeSchemas = map[string]any{
	"params": json.RawMessage(`{"type": "object", "additionalProperties": false,
		"properties": {"requests": {"type": "array", "items": {"type": "object"}}}}`),
	"output": json.RawMessage(`{"type": "object", "required": ["answers"]}`),
}

type answer struct {
	Result json.RawMessage `json:"result"`
	Error  *errcode.Body   `json:"error"`
}

// prober runs capability requests through the probe word under a manifest declaring caps.
type prober struct {
	t   *testing.T
	mod *wasm.Module
}

func newProber(t *testing.T, h *wasm.Host, class string, caps []map[string]any) *prober {
	t.Helper()
	module, digest := testWord(t, "probe")
	extra := map[string]any{"class": class, "capabilities": caps, "limits": map[string]any{"output_bytes": 4 << 20}}
	for k, v := range probeSchemas {
		extra[k] = v
	}
	return &prober{t: t, mod: load(t, h, wordManifest(t, "probe", extra), module, digest)}
}

// run sends the requests and returns the answers and the whole result.
func (p *prober) run(reqs ...map[string]any) ([]answer, *wasm.Result) {
	p.t.Helper()
	return p.runWith(wasm.RunOptions{}, reqs...)
}

// runWith is run with what the host holds for the invocation (a backup grant).
func (p *prober) runWith(opts wasm.RunOptions, reqs ...map[string]any) ([]answer, *wasm.Result) {
	p.t.Helper()
	res := p.mod.RunWith(context.Background(), mustJSON(p.t, map[string]any{"requests": reqs}), opts)
	if res.Outcome != wasm.Completed {
		p.t.Fatalf("probe: %s %s: %s\n%s", res.Outcome, res.Code, res.Message, res.Transcript)
	}
	var out struct{ Answers []answer }
	if err := json.Unmarshal(res.Output, &out); err != nil {
		p.t.Fatal(err)
	}
	if len(out.Answers) != len(reqs) {
		p.t.Fatalf("%d answers to %d requests", len(out.Answers), len(reqs))
	}
	return out.Answers, res
}

// one sends one request and decodes a successful result into v; it returns the error code, if any.
func (p *prober) one(req map[string]any, v any) string {
	p.t.Helper()
	a, _ := p.run(req)
	if a[0].Error != nil {
		return a[0].Error.Code
	}
	if v != nil {
		if err := json.Unmarshal(a[0].Result, v); err != nil {
			p.t.Fatalf("result %s: %v", a[0].Result, err)
		}
	}
	return ""
}

// must is one that must succeed.
func (p *prober) must(req map[string]any, v any) {
	p.t.Helper()
	a, _ := p.run(req)
	if a[0].Error != nil {
		p.t.Fatalf("%v: %s: %s", req, a[0].Error.Code, a[0].Error.Message)
	}
	if v != nil {
		if err := json.Unmarshal(a[0].Result, v); err != nil {
			p.t.Fatalf("result %s: %v", a[0].Result, err)
		}
	}
}
