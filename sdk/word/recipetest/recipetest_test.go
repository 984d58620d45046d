package recipetest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/recipetest"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

// The kit's own check (testdata/scripted) answers what its declaration says; the repair word is the
// example recipe's, which writes one file beneath its root.
const repairDir = "../../../examples/recipe-motd/repair"

var built struct {
	once          sync.Once
	dir           string
	check, repair string
	err           error
	out           []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func modules(t *testing.T) (string, string) {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "recipetest-"); built.err != nil {
			return
		}
		built.check, built.repair = filepath.Join(built.dir, "scripted.wasm"), filepath.Join(built.dir, "motd_write.wasm")
		for _, b := range [][2]string{{built.check, "./testdata/scripted"}, {built.repair, repairDir}} {
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
	return built.check, built.repair
}

func load(t *testing.T, root string, edits ...func(*manifest.Manifest)) *recipetest.Recipe {
	check, repair := modules(t)
	var opts []wordtest.Option
	for _, e := range edits {
		opts = append(opts, wordtest.WithManifest(e))
	}
	var rep recipetest.Module
	if root != "" {
		rep = recipetest.Module{Wasm: repair, Manifest: filepath.Join(repairDir, "manifest.json"),
			Options: []wordtest.Option{wordtest.Paths("fs.write", root)}}
	}
	return recipetest.Load(t, recipetest.Module{Wasm: check, Manifest: "testdata/scripted/manifest.json", Options: opts}, rep)
}

func fail(params map[string]any) map[string]any {
	d := map[string]any{"verdict": "fail"}
	if params != nil {
		d["repair"] = params
	}
	return d
}

func TestBudgetThenEscalateThenPassResets(t *testing.T) {
	root := wordtest.WritableDir(t)
	r := load(t, root)
	params := map[string]any{"path": filepath.Join(root, "f"), "content": "x"}
	if tick := r.TickWith(fail(params)); tick.Fails != 1 || tick.Attempt != 0 {
		t.Fatalf("tick 1: %+v", tick)
	}
	for n := 1; n <= recipetest.Attempts; n++ {
		if tick := r.TickWith(fail(params)); tick.Attempt != n || !tick.Repaired {
			t.Fatalf("attempt %d: %+v %+v", n, tick, tick.Repair)
		}
	}
	if tick := r.TickWith(fail(params)); !tick.Escalated {
		t.Fatalf("after the budget: %+v", tick)
	}
	if tick := r.TickWith(fail(params)); tick.Escalated || tick.Attempt != 0 {
		t.Fatalf("an escalated run escalates once and repairs no more: %+v", tick)
	}
	if tick := r.TickWith(map[string]any{"verdict": "pass"}); tick.Fails != 0 {
		t.Fatalf("pass: %+v", tick)
	}
	r.TickWith(fail(params))
	if tick := r.TickWith(fail(params)); tick.Attempt != 1 {
		t.Fatalf("a pass starts a new run with a fresh budget: %+v", tick)
	}
}

func TestUnknownNeitherCountsNorResets(t *testing.T) {
	root := wordtest.WritableDir(t)
	r := load(t, root)
	params := map[string]any{"path": filepath.Join(root, "f"), "content": "x"}
	r.TickWith(fail(params))
	if tick := r.TickWith(map[string]any{"verdict": "unknown"}); tick.Fails != 1 || tick.Attempt != 0 {
		t.Fatalf("unknown: %+v", tick)
	}
	if tick := r.TickWith(fail(params)); tick.Attempt != 1 {
		t.Fatalf("the second failing tick repairs: %+v", tick)
	}
}

func TestRepairParams(t *testing.T) {
	root := wordtest.WritableDir(t)
	r := load(t, root)
	r.TickWith(fail(nil))
	if tick := r.TickWith(fail(nil)); tick.Attempt != 1 || tick.Repaired || tick.Repair.Code != errcode.RecipeParamsNotDerived {
		t.Fatalf("node_derived without params: %+v %+v", tick, tick.Repair)
	}
	if tick := r.TickWith(fail(map[string]any{"path": filepath.Join(root, "f"), "content": "x", "mode": "0777"})); tick.Repaired ||
		tick.Repair.Code != errcode.WordParamInvalid {
		t.Fatalf("params outside the repair word's schema: %+v %+v", tick, tick.Repair)
	}
	if _, err := os.Stat(filepath.Join(root, "f")); !os.IsNotExist(err) {
		t.Fatalf("a refused repair wrote: %v", err)
	}
}

func TestCheckOnlyEscalatesOnSecondFailingTick(t *testing.T) {
	r := load(t, "", func(m *manifest.Manifest) { m.Recipe.Repair, m.Recipe.NodeDerived = "", false })
	if r.Repair() != nil {
		t.Fatal("a check-only recipe has no repair word")
	}
	if tick := r.Tick(); tick.Verdict.Verdict != "fail" || tick.Escalated {
		t.Fatalf("tick 1 (the declaration's default is fail): %+v", tick)
	}
	if tick := r.TickWith(nil); !tick.Escalated || tick.Attempt != 0 {
		t.Fatalf("tick 2: %+v", tick)
	}
}
