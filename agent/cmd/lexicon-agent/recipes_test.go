package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRecipesCommand(t *testing.T) {
	state := t.TempDir()
	ledger := filepath.Join(state, "recipes", "ledger")
	os.MkdirAll(ledger, 0o700)
	lines := `{"at":"2026-11-30T09:00:00Z","event":"check","verdict":"fail","detail":"nginx.service is failed/failed"}
{"at":"2026-11-30T09:05:00Z","event":"check","verdict":"fail","detail":"nginx.service is failed/failed"}
{"at":"2026-11-30T09:05:00Z","event":"attempt","n":1,"mode":"repair","word":"restart_unit","params":{"unit":"nginx.service"}}
`
	os.WriteFile(filepath.Join(ledger, "unit_health.jsonl"), []byte(lines), 0o600)

	code, out, errOut := runAgent(t, "recipes", "--state-dir", state, "-o", "json")
	var res struct {
		Recipes []struct {
			Name         string `json:"name"`
			LastVerdict  string `json:"last_verdict"`
			FailingTicks int    `json:"failing_ticks"`
			Attempts     int    `json:"attempts"`
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Recipes) != 1 {
		t.Fatalf("%d %s %s", code, out, errOut)
	}
	if r := res.Recipes[0]; r.Name != "unit_health" || r.LastVerdict != "fail" || r.FailingTicks != 2 || r.Attempts != 1 {
		t.Fatalf("%+v", r)
	}
	code, out, _ = runAgent(t, "recipes", "--state-dir", state, "unit_health")
	if code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(out, `"event":"attempt"`) {
		t.Fatalf("%d %s", code, out)
	}
	if code, _, _ := runAgent(t, "recipes", "--state-dir", state, "../etc"); code != 2 {
		t.Fatalf("a path as a recipe name: exit %d", code)
	}
}
