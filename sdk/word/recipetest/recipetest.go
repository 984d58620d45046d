//go:build !wasip1

// Package recipetest runs a built recipe's check and repair word through the real Lexicon host under
// the recipe loop's rules, inside an ordinary `go test`.
//
//	r := recipetest.Load(t,
//		recipetest.Module{Wasm: "motd.wasm", Manifest: "manifest.json"},
//		recipetest.Module{Wasm: "motd_write.wasm", Manifest: "repair/manifest.json"})
//	r.Tick() // fail: counted, no repair yet
//	tick := r.Tick() // fail again: the repair runs
//	if !tick.Repaired { t.Fatal(tick.Repair.Code) }
//
// The rules are the agent's, for one recipe: unknown never repairs and never counts; a repair runs only
// after two consecutive failing ticks; a failing run gets at most three attempts, and the failing tick
// after the last one escalates (so does the second failing tick of a recipe without a repair); a pass
// ends the run. The params a repair gets come from this tick's failing verdict, checked against the
// repair word's params schema by the host; a node_derived recipe whose check gave none makes the
// attempt fail with recipe.params_not_derived, as on a node.
//
// What it does not model is time, the job lock and the ledger: every tick is due, the backoff between
// attempts (0, 10 and 30 minutes on a node) is not waited, and nothing is written. Those are the
// agent's, tested there; this kit tests what an author writes.
package recipetest

import (
	"encoding/json"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

// The loop's rules, as the agent applies them.
const (
	// FailingTicks is how many consecutive failing ticks a repair waits for.
	FailingTicks = 2
	// Attempts is the budget of repair attempts in one failing run.
	Attempts = 3
)

// Module is one built module: its .wasm, its manifest, and how wordtest loads it (Paths, WithSystemd).
type Module struct {
	Wasm, Manifest string
	Options        []wordtest.Option
}

// Recipe is a recipe's check and (optional) repair word, loaded into the real host, with the state of
// its current failing run.
type Recipe struct {
	t      testing.TB
	check  *wordtest.Word
	repair *wordtest.Word
	rc     manifest.Recipe

	fails, attempts int
	escalated       bool
}

// Tick is what one tick saw and did.
type Tick struct {
	// Verdict is the check's answer.
	Verdict wordtest.Verdict
	// Fails is the number of consecutive failing ticks, this one included.
	Fails int
	// Attempt is the repair attempt this tick made (1 to Attempts), 0 if it made none.
	Attempt int
	// Repair is the repair word's result, when an attempt ran it.
	Repair *wasm.Result
	// Repaired says the attempt's repair word completed (the next tick's check says whether it helped).
	Repaired bool
	// Escalated says this tick opened a case for a person: the budget is spent, or there is no repair.
	Escalated bool
}

// Load loads the check, and the repair word unless the recipe has none (pass a zero Module then). The
// recipe manifest must name the repair word's manifest as its repair, as a release would check.
func Load(t testing.TB, check, repair Module) *Recipe {
	t.Helper()
	r := &Recipe{t: t, check: wordtest.Load(t, check.Wasm, check.Manifest, check.Options...)}
	cm := r.check.Manifest()
	if cm.Kind != manifest.KindRecipe || cm.Recipe == nil {
		t.Fatalf("recipetest: %s is a %s, not a recipe", check.Manifest, cm.Kind)
	}
	r.rc = *cm.Recipe
	if r.repairable() {
		if repair.Wasm == "" {
			t.Fatalf("recipetest: %s names the repair word %q; load it too", cm.Name, r.rc.Repair)
		}
		r.repair = wordtest.Load(t, repair.Wasm, repair.Manifest, repair.Options...)
		if rm := r.repair.Manifest(); rm.Kind != manifest.KindWord || rm.Name != r.rc.Repair {
			t.Fatalf("recipetest: %s names the repair word %q, %s is the %s %q", cm.Name, r.rc.Repair, repair.Manifest, rm.Kind, rm.Name)
		}
	}
	return r
}

func (r *Recipe) repairable() bool { return r.rc.Repair != "" && !r.rc.NoRepair }

// Check is the loaded check, to run it directly.
func (r *Recipe) Check() *wordtest.Word { return r.check }

// Repair is the loaded repair word, nil for a recipe without one.
func (r *Recipe) Repair() *wordtest.Word { return r.repair }

// Tick runs the check with its declaration (the manifest's defaults, with WithSelf's names) and applies
// the rules to the verdict.
func (r *Recipe) Tick() Tick { r.t.Helper(); return r.TickWith(nil) }

// TickWith runs the check with decl instead of its declaration: a test points it at its own files.
func (r *Recipe) TickWith(decl any) Tick {
	r.t.Helper()
	v := r.check.Check(decl)
	tick := Tick{Verdict: v}
	switch v.Verdict {
	case word.VerdictUnknown:
		tick.Fails = r.fails
		return tick
	case word.VerdictPass:
		r.fails, r.attempts, r.escalated = 0, 0, false
		return tick
	case word.VerdictFail:
	default:
		r.t.Fatalf("recipetest: the check answered %q, not pass, fail or unknown", v.Verdict)
	}
	r.fails++
	tick.Fails = r.fails
	switch {
	case r.escalated || r.fails < FailingTicks:
	case !r.repairable() || r.attempts >= Attempts:
		r.escalated, tick.Escalated = true, true
	default:
		r.attempts++
		tick.Attempt = r.attempts
		tick.Repair = r.runRepair(v)
		tick.Repaired = tick.Repair.Outcome == wasm.Completed
	}
	return tick
}

// runRepair runs the repair word with the verdict's params, as the agent prepares them.
func (r *Recipe) runRepair(v wordtest.Verdict) *wasm.Result {
	params := v.Repair
	if r.rc.NodeDerived {
		var m map[string]json.RawMessage
		if json.Unmarshal(params, &m) != nil || m == nil {
			return &wasm.Result{Outcome: wasm.Failed, Code: errcode.RecipeParamsNotDerived,
				Message: "the recipe is node_derived and its check gave no repair params of its own"}
		}
	} else if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	return r.repair.Run(params)
}
