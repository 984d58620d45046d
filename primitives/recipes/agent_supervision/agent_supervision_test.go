package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../../build/wasm/recipes/agent_supervision.wasm"

func TestSupervision(t *testing.T) {
	cases := []struct {
		name, show, verdict string
		detail              []string
	}{
		{"enabled, restarts on failure", "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\nRestart=on-failure\n",
			"pass", []string{"enabled with Restart=on-failure"}},
		{"enabled, restarts always", "LoadState=loaded\nActiveState=active\nUnitFileState=enabled\nRestart=always\n", "pass", nil},
		{"disabled, never restarted", "LoadState=loaded\nActiveState=active\nUnitFileState=disabled\nRestart=no\n",
			"fail", []string{"is disabled, so it does not start at boot", "Restart=no"}},
		{"enabled for this boot only", "LoadState=loaded\nActiveState=active\nUnitFileState=enabled-runtime\nRestart=on-failure\n",
			"fail", []string{"enabled-runtime"}},
		{"restarts only on abnormal ends", "LoadState=loaded\nActiveState=active\nUnitFileState=enabled\nRestart=on-abnormal\n",
			"fail", []string{"Restart=on-abnormal"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := wordtest.NewFakeSystemd(map[string]string{"lexicon-agent.service": tc.show})
			v := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake)).Check(nil)
			if v.Verdict != tc.verdict {
				t.Fatalf("%+v", v)
			}
			for _, d := range tc.detail {
				if !strings.Contains(v.Detail, d) {
					t.Fatalf("detail %q lacks %q", v.Detail, d)
				}
			}
		})
	}
}

func TestNotInstalled(t *testing.T) {
	v := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(wordtest.NewFakeSystemd(nil))).Check(nil)
	if v.Verdict != "fail" || !strings.Contains(v.Detail, "lexicon-agent.service is not installed") {
		t.Fatalf("%+v", v)
	}
	// The repair is handed the declared unit folder, where restore_agent_unit puts the unit back.
	if got, _ := json.Marshal(v.Repair); string(got) != `{"unit_dir":"/etc/systemd/system"}` {
		t.Fatalf("repair params %s", got)
	}
}

// TestWithoutSystemd: a machine without systemd cannot say how the agent is supervised.
func TestWithoutSystemd(t *testing.T) {
	if v := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithoutSystemd()).Check(nil); v.Verdict != "unknown" || v.Detail == "" {
		t.Fatalf("%+v", v)
	}
}
