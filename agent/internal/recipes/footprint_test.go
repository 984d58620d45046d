package recipes

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/joblock"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/host/wasm/wasmtest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// footprintNode is a node whose converge word, drift and enforce recipes may act beneath base, with a
// plane serving the footprint's files and the web unit.
func footprintNode(t *testing.T, base string, plane *wasmtest.Artifacts) *env {
	t.Helper()
	roots := func(m *manifest.Manifest) {
		for i := range m.Capabilities {
			if m.Capabilities[i].Paths != nil {
				m.Capabilities[i].Paths = []string{base}
			}
		}
	}
	return newEnv(t, setup{
		units: map[string]string{"web.service": "LoadState=loaded\nActiveState=inactive\nSubState=dead\nUnitFileState=disabled\n"},
		mods: func(*env) []vocabtest.Module {
			return []vocabtest.Module{
				{Manifest: root + "primitives/converge/manifest.json", File: root + "build/wasm/converge.wasm", Edit: roots},
				recipeMod("footprint_drift", roots),
				recipeMod("footprint_enforce", roots),
			}
		},
		config: func(e *env, cfg *wasm.Config) {
			bounds := footprint.Bounds{Paths: []string{base}, Units: []string{"web.service"}}
			cfg.Converge = func() (*footprint.Bounds, error) { return &bounds, nil }
			cfg.Artifacts = plane
			cfg.ConvergeDir = filepath.Join(filepath.Dir(e.state), "converge")
		},
	})
}

// TestFootprintDriftAndEnforce: a hand edit of an enforced file and of one that is not. The enforce
// recipe's repair is due after two failing ticks, but a converge job holds the job lock, so the loop
// waits (busy) rather than run beside it; once the job ends, the repair converges the drifted item
// again from the recorded footprint (nothing fetched, its unit restarted). The drift of the other
// file is never repaired: it becomes a case naming the item.
func TestFootprintDriftAndEnforce(t *testing.T) {
	base := testkit.SafeDir(t)
	plane := wasmtest.NewArtifacts(t)
	e := footprintNode(t, base, plane)
	conf, page := []byte("listen 80;\n"), []byte("<h1>hi</h1>\n")
	fp := footprint.Footprint{Schema: footprint.SchemaName,
		Files: []footprint.File{
			{Path: filepath.Join(base, "web.conf"), SHA256: plane.Put(conf), Size: int64(len(conf)), Mode: "0644", Owner: "root", Group: "root", Enforce: true},
			{Path: filepath.Join(base, "index.html"), SHA256: plane.Put(page), Size: int64(len(page)), Mode: "0644", Owner: "root", Group: "root"},
		},
		Units: []footprint.Unit{{Name: "web.service", Enabled: true, Started: true, Files: []string{filepath.Join(base, "web.conf")}, Enforce: true}},
	}
	params, _ := json.Marshal(map[string]any{"footprint": fp})
	res := e.loop.cfg.Runner.Run(context.Background(), channel.Job{ID: "job_1", Word: "converge", Class: "change", Params: params})
	if res.Outcome != channel.OutcomeCompleted {
		t.Fatalf("converge job: %s %s %s", res.Outcome, res.Code, res.Message)
	}
	e.step()
	e.want("footprint_enforce", "0 check:pass")
	e.want("footprint_drift", "0 check:pass")

	for p, b := range map[string]string{"web.conf": "listen 8080;\n", "index.html": "defaced\n"} {
		if err := os.WriteFile(filepath.Join(base, p), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A converge job is running.
	lock, err := joblock.TryAcquire(e.lock)
	if err != nil {
		t.Fatal(err)
	}
	e.every(5*time.Minute, 2)
	e.want("footprint_enforce", "0 check:pass", "5 check:fail", "10 check:fail", "10 busy")
	if b, _ := os.ReadFile(filepath.Join(base, "web.conf")); string(b) != "listen 8080;\n" {
		t.Fatal("a repair ran beside a job")
	}
	lock.Release()
	served := len(plane.Served())
	e.after(5 * time.Minute)
	e.want("footprint_enforce", "0 check:pass", "5 check:fail", "10 check:fail", "10 busy", "15 check:fail", "15 attempt:1:repair", "15 outcome:1:repaired")
	if b, _ := os.ReadFile(filepath.Join(base, "web.conf")); string(b) != string(conf) {
		t.Fatalf("not repaired: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "index.html")); string(b) != "defaced\n" {
		t.Fatal("the repair touched an item that is not enforced")
	}
	if len(plane.Served()) != served {
		t.Fatal("the repair fetched what was staged")
	}
	if a := e.sd.Actions(); !slices.Contains(a, "restart web.service") {
		t.Fatalf("the unit of the repaired file was not restarted: %v", a)
	}
	attempt := e.ledger("footprint_enforce")[5]
	if attempt.Word != "converge" || !strings.Contains(string(attempt.Params), `"file:`+filepath.Join(base, "web.conf")) || strings.Contains(string(attempt.Params), "index.html") {
		t.Fatalf("repair params %s", attempt.Params)
	}
	e.after(5 * time.Minute)
	e.want("footprint_enforce", "0 check:pass", "5 check:fail", "10 check:fail", "10 busy", "15 check:fail", "15 attempt:1:repair",
		"15 outcome:1:repaired", "20 check:pass")

	// The drift recipe ticks every 15 minutes: failing at 15 and 30, it opens a case naming the item.
	e.every(5*time.Minute, 2)
	rep := e.report("footprint_drift")
	if len(rep.cases) != 1 || !strings.Contains(rep.cases[0].Summary, "file:"+filepath.Join(base, "index.html")+" (content)") {
		t.Fatalf("%s; cases %+v", strings.Join(e.timeline("footprint_drift"), ", "), rep.cases)
	}
}
