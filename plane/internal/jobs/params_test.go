package jobs_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func word(t *testing.T, params string, wallMS int) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(`{"schema": "lexicon/manifest/v1", "name": "w", "kind": "word", "version": "1.0.0", "class": "look",
		"summary": "s", "params": ` + params + `, "output": {"type": "object"}, "capabilities": [],
		"limits": {"memory_mib": 64, "wall_time_ms": ` + strconv.Itoa(wallMS*1000) + `, "output_bytes": 65536}, "module": {"file": "w.wasm"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestParams: no params are {} once, wherever a job's params enter; the schema is the word's own.
func TestParams(t *testing.T) {
	open := word(t, `{"type": "object", "additionalProperties": false, "properties": {"n": {"type": "integer"}}}`, 2)
	for _, raw := range []json.RawMessage{nil, {}} {
		got, err := jobs.Params(open, raw)
		if err != nil || string(got) != `{}` {
			t.Fatalf("Params(%q) = %s, %v; want {}", raw, got, err)
		}
	}
	if got, err := jobs.Params(open, json.RawMessage(`{"n": 3}`)); err != nil || string(got) != `{"n": 3}` {
		t.Fatalf("Params kept %s, %v", got, err)
	}
	_, err := jobs.Params(open, json.RawMessage(`{"n": "three"}`))
	testkit.WantCode(t, err, errcode.WordParamInvalid)

	required := word(t, `{"type": "object", "additionalProperties": false, "properties": {"n": {"type": "integer"}}, "required": ["n"]}`, 2)
	_, err = jobs.Params(required, nil)
	testkit.WantCode(t, err, errcode.WordParamInvalid) // the default is checked like any params

	if b := jobs.Budget(open); b != 2*time.Second+time.Minute {
		t.Fatalf("Budget = %s, want the word's wall time and a minute", b)
	}
}
