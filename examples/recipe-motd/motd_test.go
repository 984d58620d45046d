package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/word/recipetest"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

// The test builds both modules from this folder's source, as the README does, so it tests what the
// author wrote and not whatever was built last.
var built struct {
	once  sync.Once
	dir   string
	err   error
	out   []byte
	check string
	fix   string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func modules(t *testing.T) (check, repair string) {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "recipe-motd-"); built.err != nil {
			return
		}
		built.check, built.fix = filepath.Join(built.dir, "motd.wasm"), filepath.Join(built.dir, "motd_write.wasm")
		for _, b := range [][2]string{{built.check, "."}, {built.fix, "./repair"}} {
			cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", b[0], b[1])
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
			if built.out, built.err = cmd.CombinedOutput(); built.err != nil {
				return
			}
		}
	})
	if built.err != nil {
		t.Fatalf("GOOS=wasip1 GOARCH=wasm go build: %v\n%s", built.err, built.out)
	}
	return built.check, built.fix
}

// load points the check at the folder holding motd, and the repair word at writeRoot.
func load(t *testing.T, motd, writeRoot string) *recipetest.Recipe {
	check, repair := modules(t)
	return recipetest.Load(t,
		recipetest.Module{Wasm: check, Manifest: "manifest.json", Options: []wordtest.Option{wordtest.Paths("fs.read", filepath.Dir(motd))}},
		recipetest.Module{Wasm: repair, Manifest: "repair/manifest.json", Options: []wordtest.Option{wordtest.Paths("fs.write", writeRoot)}})
}

const line = "This machine is managed by Lexicon."

func TestRepairsAfterTwoTicks(t *testing.T) {
	motd := filepath.Join(wordtest.WritableDir(t), "motd")
	os.WriteFile(motd, []byte("welcome"), 0o644)
	r := load(t, motd, filepath.Dir(motd))
	decl := map[string]any{"path": motd, "line": line}

	first := r.TickWith(decl)
	if first.Verdict.Verdict != "fail" || first.Attempt != 0 {
		t.Fatalf("first failing tick must not repair: %+v", first)
	}
	second := r.TickWith(decl)
	if second.Attempt != 1 || !second.Repaired {
		t.Fatalf("second failing tick must repair: %+v %+v", second, second.Repair)
	}
	if b, _ := os.ReadFile(motd); string(b) != "welcome\n"+line+"\n" {
		t.Fatalf("motd after repair: %q", b)
	}
	if after := r.TickWith(decl); after.Verdict.Verdict != "pass" {
		t.Fatalf("after the repair: %+v", after)
	}
}

func TestFailingRepairEscalates(t *testing.T) {
	motd := filepath.Join(wordtest.WritableDir(t), "motd")
	os.WriteFile(motd, []byte("welcome\n"), 0o644)
	// The repair word may write only elsewhere: every attempt is refused by the host.
	r := load(t, motd, t.TempDir())
	decl := map[string]any{"path": motd, "line": line}
	if tick := r.TickWith(decl); tick.Attempt != 0 {
		t.Fatalf("%+v", tick)
	}
	for n := 1; n <= recipetest.Attempts; n++ {
		tick := r.TickWith(decl)
		if tick.Attempt != n || tick.Repaired || tick.Repair.Code != "capability.denied" {
			t.Fatalf("attempt %d: %+v %+v", n, tick, tick.Repair)
		}
	}
	if tick := r.TickWith(decl); !tick.Escalated || tick.Attempt != 0 {
		t.Fatalf("the tick after the budget must escalate: %+v", tick)
	}
	if b, _ := os.ReadFile(motd); string(b) != "welcome\n" {
		t.Fatalf("a refused repair changed the file: %q", b)
	}
}

func TestMissingFileIsCreated(t *testing.T) {
	motd := filepath.Join(wordtest.WritableDir(t), "motd")
	r := load(t, motd, filepath.Dir(motd))
	decl := map[string]any{"path": motd, "line": line}
	if tick := r.TickWith(decl); tick.Verdict.Verdict != "fail" || tick.Attempt != 0 {
		t.Fatalf("one tick never repairs: %+v", tick)
	}
	if tick := r.TickWith(decl); !tick.Repaired {
		t.Fatalf("%+v %+v", tick, tick.Repair)
	}
	if b, _ := os.ReadFile(motd); string(b) != line+"\n" {
		t.Fatalf("%q", b)
	}
}

func TestUnknownNeverCounts(t *testing.T) {
	dir := wordtest.WritableDir(t)
	motd := filepath.Join(dir, "motd")
	os.WriteFile(motd, []byte("welcome\n"), 0o644)
	r := load(t, motd, dir)
	decl := map[string]any{"path": motd, "line": line}
	r.TickWith(decl)
	// A file larger than the check reads is unknown: it must neither count nor repair.
	os.WriteFile(motd, []byte(strings.Repeat("x", 70000)), 0o644)
	if tick := r.TickWith(decl); tick.Verdict.Verdict != "unknown" || tick.Attempt != 0 || tick.Fails != 1 {
		t.Fatalf("%+v", tick)
	}
	os.WriteFile(motd, []byte("welcome\n"), 0o644)
	if tick := r.TickWith(decl); tick.Attempt != 1 || !tick.Repaired {
		t.Fatalf("the second failing tick, with an unknown between, repairs: %+v", tick)
	}
}

func TestDeclarationIsTheManifests(t *testing.T) {
	check, _ := modules(t)
	// Without edits the check reads what its signed manifest declares, /etc/motd.d/lexicon.
	w := wordtest.Load(t, check, "manifest.json")
	if v := w.Check(nil); !strings.Contains(v.Detail, "/etc/motd.d/lexicon") {
		t.Fatalf("%+v", v)
	}
}
