package main_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../../build/wasm/recipes/unit_health.wasm"

const (
	running = "LoadState=loaded\nActiveState=active\nSubState=running\nResult=success\nUnitFileState=enabled\nMainPID=812\n"
	failed  = "LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\nUnitFileState=enabled\nMainPID=0\n"
)

func TestDeclaration(t *testing.T) {
	cases := []struct {
		name   string
		units  map[string]string
		want   string
		detail string
		repair string
	}{
		{"nothing installed", nil, "pass", "none of the 9 declared units is installed and enabled here", ""},
		{"all running", map[string]string{"nginx.service": running, "postgresql.service": running},
			"pass", "active and answering: postgresql.service, nginx.service", ""},
		{"a oneshot that stays active", map[string]string{"postgresql.service": "LoadState=loaded\nActiveState=active\nSubState=exited\nUnitFileState=enabled\n"},
			"pass", "postgresql.service", ""},
		{"nginx failed", map[string]string{"nginx.service": failed, "postgresql.service": running},
			"fail", "nginx.service is failed/failed (exit-code)", `{"unit":"nginx.service"}`},
		{"dependencies first", map[string]string{"nginx.service": failed, "postgresql.service": failed},
			"fail", "postgresql.service is failed/failed (exit-code); nginx.service is failed/failed (exit-code)", `{"unit":"postgresql.service"}`},
		{"stopped on purpose", map[string]string{"apache2.service": strings.Replace(failed, "enabled", "disabled", 1)}, "pass", "none of", ""},
		{"masked", map[string]string{"nginx.service": strings.Replace(failed, "UnitFileState=enabled", "UnitFileState=masked", 1)}, "pass", "none of", ""},
		{"still starting", map[string]string{"redis-server.service": "LoadState=loaded\nActiveState=activating\nSubState=auto-restart\nUnitFileState=enabled\n"},
			"fail", "redis-server.service is activating/auto-restart", `{"unit":"redis-server.service"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := wordtest.NewFakeSystemd(tc.units)
			v := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake)).Check(nil)
			if v.Verdict != tc.want || !strings.Contains(v.Detail, tc.detail) || string(v.Repair) != tc.repair {
				t.Fatalf("%+v", v)
			}
			if len(fake.Actions()) != 0 {
				t.Fatalf("a check changed something: %v", fake.Actions())
			}
		})
	}
}

// TestProbe: an active unit must also answer its probe, when it declares one.
func TestProbe(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	allow := wordtest.WithManifest(func(m *manifest.Manifest) {
		for i := range m.Capabilities {
			if m.Capabilities[i].Cap == "net.http" {
				m.Capabilities[i].Hosts = []string{host}
			}
		}
	})
	fake := wordtest.NewFakeSystemd(map[string]string{"nginx.service": running})
	w := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake), allow)
	decl := map[string]any{"units": []map[string]string{{"unit": "nginx.service", "probe": srv.URL + "/health"}}}
	if v := w.Check(decl); v.Verdict != "pass" {
		t.Fatalf("answering: %+v", v)
	}
	status = http.StatusNotFound // answering, even if not with a page
	if v := w.Check(decl); v.Verdict != "pass" {
		t.Fatalf("404: %+v", v)
	}
	status = http.StatusServiceUnavailable
	if v := w.Check(decl); v.Verdict != "fail" || !strings.Contains(v.Detail, "with 503") || string(v.Repair) != `{"unit":"nginx.service"}` {
		t.Fatalf("503: %+v", v)
	}
	srv.Close()
	if v := w.Check(decl); v.Verdict != "fail" || !strings.Contains(v.Detail, "does not answer") {
		t.Fatalf("closed: %+v", v)
	}
}

func TestWithoutSystemd(t *testing.T) {
	if v := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithoutSystemd()).Check(nil); v.Verdict != "unknown" || v.Repair != nil {
		t.Fatalf("%+v", v)
	}
}

// TestRepairFitsRestartUnit: what the check asks of its repair word is what restart_unit takes.
func TestRepairFitsRestartUnit(t *testing.T) {
	w := wordtest.Load(t, "../../../build/wasm/restart_unit.wasm", "../../restart_unit/manifest.json",
		wordtest.WithSystemd(wordtest.NewFakeSystemd(map[string]string{"nginx.service": failed})))
	fake := wordtest.NewFakeSystemd(map[string]string{"nginx.service": failed})
	v := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake)).Check(nil)
	if err := w.Manifest().CheckParams(v.Repair); err != nil {
		t.Fatalf("restart_unit refuses %s: %v", v.Repair, err)
	}
}
