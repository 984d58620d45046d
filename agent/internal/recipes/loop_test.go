package recipes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lexicon-fleet/lexicon/agent/internal/joblock"
	"github.com/lexicon-fleet/lexicon/agent/internal/metrics"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

const tick = 5 * time.Minute // unit_health's and scripted's interval

// unitHealth is a node with unit_health, its repair word and host_report, nginx failed.
func unitHealth(edit func(*manifest.Manifest)) setup {
	return setup{
		units: map[string]string{"nginx.service": failed},
		mods: func(*env) []vocabtest.Module {
			return []vocabtest.Module{recipeMod("unit_health", edit), wordMod("restart_unit"), wordMod("host_report")}
		},
	}
}

// scripted is a node with the scripted recipe (node_derived, repairing with restart_unit).
func scripted(edit func(*manifest.Manifest)) setup {
	return setup{
		units: map[string]string{"nginx.service": failed},
		mods: func(e *env) []vocabtest.Module {
			return []vocabtest.Module{scriptedMod(e.script, edit), wordMod("restart_unit"), wordMod("host_report")}
		},
	}
}

func TestTwoTickRule(t *testing.T) {
	e := newEnv(t, unitHealth(nil))
	m := metrics.New()
	e.loop.cfg.Metrics = m
	e.step()
	e.want("unit_health", "0 check:fail")
	if e.sd.restarts() != 0 {
		t.Fatal("repaired after one failing tick")
	}
	e.after(tick)
	e.want("unit_health", "0 check:fail", "5 check:fail", "5 attempt:1:repair", "5 outcome:1:repaired")
	if e.sd.restarts() != 1 {
		t.Fatalf("restarts %v", e.sd.Actions())
	}
	e.after(tick) // the restart healed nginx
	e.after(tick) // a pass after a pass writes nothing
	e.want("unit_health", "0 check:fail", "5 check:fail", "5 attempt:1:repair", "5 outcome:1:repaired", "10 check:pass")

	// A failing tick, a pass, a failing tick: never two in a row, never a repair.
	e.unit("nginx.service", failed)
	e.after(tick)
	e.unit("nginx.service", running)
	e.after(tick)
	e.unit("nginx.service", failed)
	e.after(tick)
	if e.sd.restarts() != 1 {
		t.Fatalf("repaired without two consecutive failing ticks: %v", e.sd.Actions())
	}
	e.after(tick)
	e.want("unit_health", "0 check:fail", "5 check:fail", "5 attempt:1:repair", "5 outcome:1:repaired", "10 check:pass",
		"20 check:fail", "25 check:pass", "30 check:fail", "35 check:fail", "35 attempt:1:repair", "35 outcome:1:repaired")
	if rep := e.report("unit_health"); rep.recipe.State != channel.RecipeActive || rep.recipe.LastVerdict != "fail" ||
		!strings.Contains(rep.recipe.Detail, "nginx.service is failed") || len(rep.cases) != 0 {
		t.Fatalf("%+v", rep)
	}
	// Every check is counted by its verdict, the quiet ones too (a pass after a pass).
	want := `
# HELP lexicon_agent_recipe_verdicts_total Recipe checks by recipe and verdict (pass, fail, unknown).
# TYPE lexicon_agent_recipe_verdicts_total counter
lexicon_agent_recipe_verdicts_total{recipe="unit_health",verdict="fail"} 5
lexicon_agent_recipe_verdicts_total{recipe="unit_health",verdict="pass"} 3
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "lexicon_agent_recipe_verdicts_total"); err != nil {
		t.Fatal(err)
	}
}

// TestWaitsAndEscalation: attempts wait 0, 10 and 30 minutes, each due on the first tick at or after
// its wait (a 7-minute interval makes that visible), and the fourth failure escalates.
func TestWaitsAndEscalation(t *testing.T) {
	e := newEnv(t, unitHealth(interval("7m")))
	e.sd.stubborn.Store(true)
	e.step()
	e.every(7*time.Minute, 10)
	e.want("unit_health",
		"0 check:fail",
		"7 check:fail", "7 attempt:1:repair", "7 outcome:1:failed:restart_unit.failed",
		"14 check:fail", // 7+10 = 17 not reached
		"21 check:fail", "21 attempt:2:repair", "21 outcome:2:failed:restart_unit.failed",
		"28 check:fail", "35 check:fail", "42 check:fail", "49 check:fail", // 21+30 = 51
		"56 check:fail", "56 attempt:3:repair", "56 outcome:3:failed:restart_unit.failed",
		"63 check:fail", "63 escalation:1",
		"70 check:fail", "70 escalation_note:1:1")
	if e.sd.restarts() != 3 {
		t.Fatalf("restarts %v", e.sd.Actions())
	}
	rep := e.report("unit_health")
	if len(rep.cases) != 1 {
		t.Fatalf("cases %+v", rep.cases)
	}
	c := rep.cases[0]
	if c.ID != 1 || c.State != channel.CaseOpen || !c.OpenedAt.Equal(t0.Add(63*time.Minute)) || c.Body == nil ||
		!strings.Contains(c.Summary, "unit_health still failing after 3 repairs (restart_unit): nginx.service is failed") {
		t.Fatalf("case %+v", c)
	}
	b := c.Body
	if b.Mode != ModeRepair || len(b.Attempts) != 3 || len(b.Vocabulary) != 2 || len(b.Recipes) != 1 {
		t.Fatalf("body %+v", b)
	}
	var a struct {
		N       int
		Word    string
		Params  map[string]string
		Outcome string
		Code    string
	}
	if err := json.Unmarshal(b.Attempts[2], &a); err != nil || a.N != 3 || a.Word != "restart_unit" ||
		a.Params["unit"] != "nginx.service" || a.Outcome != OutcomeFailed || a.Code != "restart_unit.failed" {
		t.Fatalf("attempt %s: %v", b.Attempts[2], err)
	}
	var hr struct {
		Hostname string
		Omitted  string
	}
	if err := json.Unmarshal(b.HostReport, &hr); err != nil || hr.Hostname == "" || hr.Omitted != "" {
		t.Fatalf("host report %s", b.HostReport)
	}
	if raw, _ := json.Marshal(b); len(raw) > channel.MaxCaseBody {
		t.Fatalf("body of %d bytes", len(raw))
	}
	list, err := Inspect(e.state)
	if err != nil || len(list) != 1 {
		t.Fatalf("inspect %+v %v", list, err)
	}
	if s := list[0]; s.Name != "unit_health" || s.LastVerdict != "fail" || s.FailingTicks != 11 || s.Attempts != 3 ||
		s.Case == nil || s.Case.ID != 1 || s.LastEvent.Event != EventEscalationNote {
		t.Fatalf("inspect %+v", s)
	}
}

// TestCaseNotesAndClose: further failing ticks are notes on the open case; unknown neither notes nor
// closes; only a pass closes; the closed summary keeps riding until a newer case replaces it; bodies and
// notes stop riding once a claim carried them.
func TestCaseNotesAndClose(t *testing.T) {
	e := newEnv(t, scripted(func(m *manifest.Manifest) { m.Recipe.NoRepair = true }))
	e.answer(fail(nil))
	e.step()
	e.after(tick) // check-only: escalates on the second failing tick
	e.want("scripted", "0 check:fail", "5 check:fail", "5 escalation:1")
	if e.report("scripted").cases[0].Body.Mode != ModeCheckOnly {
		t.Fatal("mode")
	}
	first := e.report("scripted").cases
	e.loop.Delivered(first)
	if c := e.report("scripted").cases[0]; c.Body != nil || c.State != channel.CaseOpen {
		t.Fatalf("a delivered body rides again: %+v", c)
	}
	e.every(tick, 2)
	if c := e.report("scripted").cases[0]; len(c.Notes) != 2 || c.Notes[0].Seq != 1 || c.Notes[1].Seq != 2 ||
		c.Notes[1].Text != "the scripted check fails" {
		t.Fatalf("notes %+v", c.Notes)
	}
	claimed := e.report("scripted").cases
	claimed[0].Notes = claimed[0].Notes[:1] // a claim that carried only the first note
	e.loop.Delivered(claimed)
	if c := e.report("scripted").cases[0]; len(c.Notes) != 1 || c.Notes[0].Seq != 2 {
		t.Fatalf("notes after delivery %+v", c.Notes)
	}

	e.answer(map[string]any{"verdict": "unknown", "detail": "cannot tell"})
	e.every(tick, 2)
	if c := e.report("scripted").cases[0]; c.State != channel.CaseOpen || len(c.Notes) != 1 {
		t.Fatalf("unknown touched the case: %+v", c)
	}
	e.answer(pass)
	e.after(tick)
	e.want("scripted", "0 check:fail", "5 check:fail", "5 escalation:1", "10 check:fail", "10 escalation_note:1:1",
		"15 check:fail", "15 escalation_note:1:2", "20 check:unknown", "30 check:pass", "30 escalation_closed:1")
	c := e.report("scripted").cases[0]
	if c.State != channel.CaseClosed || !c.ClosedAt.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("closed %+v", c)
	}
	e.loop.Delivered(e.report("scripted").cases)
	e.every(tick, 3)
	if c := e.report("scripted").cases; len(c) != 1 || c[0].ID != 1 || c[0].State != channel.CaseClosed {
		t.Fatalf("the close stopped riding: %+v", c)
	}

	// A newer case replaces it, with the next id, across a restart.
	e = newEnv(t, setup{dirs: e})
	e.answer(fail(nil))
	e.after(tick)
	e.after(tick)
	if c := e.report("scripted").cases; len(c) != 1 || c[0].ID != 2 || c[0].State != channel.CaseOpen || c[0].Body == nil {
		t.Fatalf("newer case %+v", c)
	}
}

func TestHold(t *testing.T) {
	e := newEnv(t, unitHealth(nil))
	e.sd.stubborn.Store(true)
	hold := filepath.Join(e.config, "hold")
	if err := os.Mkdir(hold, 0o755); err != nil {
		t.Fatal(err)
	}
	e.step()
	e.after(tick)
	marker := filepath.Join(hold, "unit_health")
	os.WriteFile(marker, nil, 0o644)
	e.every(tick, 3)
	if rep := e.report("unit_health"); rep.recipe.State != channel.RecipeHeld || rep.recipe.Detail != "held by hold/unit_health" {
		t.Fatalf("%+v", rep.recipe)
	}
	os.Remove(marker)
	e.every(tick, 2)
	// The hold ended the failing run: after it, two failing ticks again, and attempts count from 1.
	e.want("unit_health", "0 check:fail", "5 check:fail", "5 attempt:1:repair", "5 outcome:1:failed:restart_unit.failed",
		"10 held", "25 check:fail", "30 check:fail", "30 attempt:1:repair", "30 outcome:1:failed:restart_unit.failed")
	if e.sd.restarts() != 2 {
		t.Fatalf("restarts while held: %v", e.sd.Actions())
	}
}

// TestHoldIgnored: a marker whose folder is not root's alone is ignored, and the ledger says so once.
func TestHoldIgnored(t *testing.T) {
	cases := []struct {
		name, why string
		prepare   func(t *testing.T, hold string)
		rootOnly  bool
	}{
		{"writable by the group", "writable by group or others (mode 0775)", func(t *testing.T, hold string) {
			os.Chmod(hold, 0o775)
		}, false},
		{"someone else's", "is owned by uid 65534, not root", func(t *testing.T, hold string) {
			if err := os.Chown(hold, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"a symlink", "is not a directory", func(t *testing.T, hold string) {
			real := hold + ".real"
			os.Rename(hold, real)
			os.Symlink(real, hold)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.rootOnly && os.Getuid() != 0 {
				t.Skip("changing a folder's owner needs root")
			}
			e := newEnv(t, unitHealth(nil))
			hold := filepath.Join(e.config, "hold")
			os.Mkdir(hold, 0o755)
			os.WriteFile(filepath.Join(hold, "unit_health"), nil, 0o644)
			tc.prepare(t, hold)
			e.step()
			e.after(tick)
			e.want("unit_health", "0 hold_ignored", "0 check:fail", "5 check:fail", "5 attempt:1:repair", "5 outcome:1:repaired")
			if ev := e.ledger("unit_health")[0]; !strings.Contains(ev.Reason, tc.why) {
				t.Fatalf("reason %q", ev.Reason)
			}
		})
	}
}

// TestReportOnly: attempts are ledgered and run nothing, and every rule counts exactly as if they had
// run: the same timeline as repairs that fail, to the minute.
func TestReportOnly(t *testing.T) {
	kinds := func(lines []string) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			f := strings.SplitN(l, ":", 3)
			out[i] = strings.Join(f[:min(2, len(f))], ":")
		}
		return out
	}
	run := func(reportOnly bool) *env {
		e := newEnv(t, unitHealth(nil))
		e.sd.stubborn.Store(true)
		e.loop.reportOnly = reportOnly
		e.step()
		e.every(tick, 12)
		return e
	}
	repair, report := run(false), run(true)
	if a, b := kinds(repair.timeline("unit_health")), kinds(report.timeline("unit_health")); strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("report-only counted differently:\n%v\n%v", a, b)
	}
	got := report.timeline("unit_health")
	for _, want := range []string{"5 attempt:1:report-only", "5 outcome:1:report-only", "15 attempt:2:report-only",
		"45 attempt:3:report-only", "50 escalation:1"} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Fatalf("no %q in\n%s", want, strings.Join(got, "\n"))
		}
	}
	if report.sd.restarts() != 0 || repair.sd.restarts() != 3 {
		t.Fatalf("restarts: report-only %d, repair %d", report.sd.restarts(), repair.sd.restarts())
	}
	c := report.report("unit_health").cases[0]
	if c.Body.Mode != ModeReportOnly || !strings.Contains(c.Summary, "3 repairs recorded in report-only mode, none ran") {
		t.Fatalf("%+v", c)
	}
}

// TestBusy: a due repair that cannot take the job lock is ledgered busy, counts nothing, and is made on
// the next tick that can; report-only takes the lock just the same.
func TestBusy(t *testing.T) {
	for _, reportOnly := range []bool{false, true} {
		mode := map[bool]string{false: "repair", true: "report-only"}[reportOnly]
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, unitHealth(nil))
			e.loop.reportOnly = reportOnly
			job, err := joblock.TryAcquire(e.lock)
			if err != nil {
				t.Fatal(err)
			}
			e.step()
			e.every(tick, 2)
			job.Release()
			e.after(tick)
			e.want("unit_health", "0 check:fail", "5 check:fail", "5 busy", "10 check:fail", "10 busy",
				"15 check:fail", "15 attempt:1:"+mode, "15 outcome:1:"+map[bool]string{false: "repaired", true: "report-only"}[reportOnly])
		})
	}
}

// TestUnknown: unknown never repairs and never counts, and an unknown after an unknown writes nothing.
func TestUnknown(t *testing.T) {
	e := newEnv(t, unitHealth(nil))
	e.sd.unknown.Store(true)
	e.step()
	e.every(tick, 12)
	e.want("unit_health", "0 check:unknown")
	if rep := e.report("unit_health"); rep.recipe.LastVerdict != "unknown" || !strings.Contains(rep.recipe.Detail, "not reachable") ||
		!rep.recipe.LastCheckAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("%+v", rep.recipe)
	}
	// fail, unknown, fail: the unknown tick neither counts nor breaks the run.
	e.sd.unknown.Store(false)
	e.after(tick)
	e.sd.unknown.Store(true)
	e.after(tick)
	e.sd.unknown.Store(false)
	e.after(tick)
	e.want("unit_health", "0 check:unknown", "65 check:fail", "70 check:unknown", "75 check:fail", "75 attempt:1:repair", "75 outcome:1:repaired")
}

// TestNotApplicable: a recipe whose scope does not fit is reported, writes one ledger line at start
// and never ticks.
func TestNotApplicable(t *testing.T) {
	agent := filepath.Join(t.TempDir(), "lexicon-agent")
	os.WriteFile(agent, []byte("the agent this release pins"), 0o755)
	platform := map[string]string{runtime.GOOS + "/" + runtime.GOARCH: agent}
	s := setup{
		units:  map[string]string{"lexicon-agent.service": running + "Restart=on-failure\n"},
		agents: platform,
		mods: func(*env) []vocabtest.Module {
			return []vocabtest.Module{recipeMod("cert_expiry", nil), recipeMod("agent_supervision", nil)}
		},
	}
	e := newEnv(t, s)
	e.step()
	e.every(time.Hour, 5)
	e.want("cert_expiry", "0 not_applicable")
	e.want("agent_supervision", "0 not_applicable")
	for name, why := range map[string]string{"cert_expiry": "scope site: the node's policy lists no names it serves",
		"agent_supervision": "scope release: this agent binary is not the one the statement pins"} {
		if rep := e.report(name); rep.recipe.State != channel.RecipeNotApplicable || !strings.HasPrefix(rep.recipe.Detail, why) ||
			rep.recipe.LastVerdict != "" {
			t.Fatalf("%s: %+v", name, rep.recipe)
		}
	}
	// One line per start.
	e = newEnv(t, setup{dirs: e})
	e.every(time.Hour, 2)
	e.want("cert_expiry", "0 not_applicable", "300 not_applicable")

	// The release's own agent, and a node that lists its names: both apply and tick.
	s.digest = sha(agent)
	s.policy = `{"classes": {"look": "accept"}, "names": ["127.0.0.1:1"]}`
	e = newEnv(t, s)
	e.step()
	e.want("agent_supervision", "0 check:pass")
	e.want("cert_expiry", "0 check:unknown")
}

// TestHandedPolicy: the loop judges scope site by the policy it is handed (the one the agent loaded at
// start and gave the host), never by reading the runner's policy file again.
func TestHandedPolicy(t *testing.T) {
	s := setup{
		policy: `{"classes": {"look": "accept"}}`,
		handed: `{"classes": {"look": "accept"}, "names": ["127.0.0.1:1"]}`,
		mods:   func(*env) []vocabtest.Module { return []vocabtest.Module{recipeMod("cert_expiry", nil)} },
	}
	e := newEnv(t, s)
	e.step()
	e.want("cert_expiry", "0 check:unknown")

	s.policy, s.handed = s.handed, `{"classes": {"look": "accept"}}`
	e = newEnv(t, s)
	e.step()
	e.want("cert_expiry", "0 not_applicable")

	cfg := e.loop.cfg
	cfg.Policy = nil
	if _, err := New(cfg); errcode.Code(err) != errcode.UsageInvalid {
		t.Fatalf("a loop without a policy: %v", err)
	}
}

// TestNodeDerived: a node_derived repair takes its params from this tick's check on this node and
// nowhere else, still checked against the repair word's schema.
func TestNodeDerived(t *testing.T) {
	cases := []struct {
		name    string
		repair  any
		outcome string
	}{
		{"no params from the check", nil, "failed:" + errcode.RecipeParamsNotDerived},
		{"the declaration's unit is never taken", map[string]any{}, "failed:" + errcode.WordParamInvalid},
		{"a param the repair word does not take", map[string]any{"unit": "nginx.service", "force": true}, "failed:" + errcode.WordParamInvalid},
		{"a unit the repair word may not touch", map[string]any{"unit": "sshd.service"}, "failed:" + errcode.CapabilityDenied},
		{"from the check", map[string]any{"unit": "nginx.service"}, "repaired"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, scripted(nil))
			e.answer(fail(tc.repair))
			e.step()
			e.after(tick)
			e.want("scripted", "0 check:fail", "5 check:fail", "5 attempt:1:repair", "5 outcome:1:"+tc.outcome)
			want := 0
			if tc.outcome == "repaired" {
				want = 1
			}
			if e.sd.restarts() != want {
				t.Fatalf("restarts %v", e.sd.Actions())
			}
		})
	}
}

// TestRepairWordLikeAJob: the repair word must be in the vocabulary and accepted by the node's policy,
// exactly as a job's word; a refused attempt counts.
func TestRepairWordLikeAJob(t *testing.T) {
	refuse := unitHealth(nil)
	refuse.policy = `{"classes": {"look": "accept", "change": "refuse"}}`
	missing := unitHealth(nil)
	missing.mods = func(*env) []vocabtest.Module { return []vocabtest.Module{recipeMod("unit_health", nil)} }
	for name, s := range map[string]setup{errcode.PolicyRefused: refuse, errcode.JobWordUnavailable: missing} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, s)
			e.step()
			e.after(tick)
			e.want("unit_health", "0 check:fail", "5 check:fail", "5 attempt:1:repair", "5 outcome:1:failed:"+name)
			if e.sd.restarts() != 0 {
				t.Fatal("ran")
			}
		})
	}
}

// TestDamagedCaseFile: a case file that does not decode is skipped, never a reason not to start, and
// the recipe's next case replaces it.
func TestDamagedCaseFile(t *testing.T) {
	e := newEnv(t, scripted(func(m *manifest.Manifest) { m.Recipe.NoRepair = true }))
	if err := os.WriteFile(filepath.Join(e.state, "cases", "scripted.json"), []byte(`{"case": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	e = newEnv(t, setup{dirs: e})
	if _, cases := e.loop.Report(); len(cases) != 0 {
		t.Fatalf("cases %+v", cases)
	}
	e.answer(fail(nil))
	e.step()
	e.after(tick)
	if c := e.report("scripted").cases; len(c) != 1 || c[0].ID != 1 || c[0].State != channel.CaseOpen {
		t.Fatalf("cases %+v", c)
	}
}

// TestNewStatement: the loop follows the vocabulary. A recipe the new statement adds starts ticking, one
// it drops stops being reported, and the dropped recipe's open case keeps riding.
func TestNewStatement(t *testing.T) {
	e := newEnv(t, scripted(func(m *manifest.Manifest) { m.Recipe.NoRepair = true }))
	e.answer(fail(nil))
	e.step()
	e.after(tick)
	next := e.rel.Next(t, vocabtest.Options{}, recipeMod("unit_health", nil), wordMod("restart_unit"))
	if err := e.loop.cfg.Vocab.Sync(e.ctx, next, channel.StatementRef{}); err != nil {
		t.Fatal(err)
	}
	e.after(time.Minute)
	recipes, cases := e.loop.Report()
	if len(recipes) != 1 || recipes[0].Name != "unit_health" || recipes[0].LastVerdict != "fail" {
		t.Fatalf("recipes %+v", recipes)
	}
	if len(cases) != 1 || cases[0].Recipe != "scripted" || cases[0].State != channel.CaseOpen {
		t.Fatalf("cases %+v", cases)
	}
	e.want("unit_health", "6 check:fail")
}

// TestDueTogetherStayTogether: recipes checked in one step are next due their interval after the step
// began, not after their own check, so a 5-minute recipe checked behind a slow 10-minute one is due
// again with it and both share one worker start, instead of drifting apart by the check's time. The
// test steps when Run would wake.
func TestDueTogetherStayTogether(t *testing.T) {
	e := newEnv(t, setup{
		mods: func(e *env) []vocabtest.Module {
			return []vocabtest.Module{recipeMod("unit_health", interval("10m")), wordMod("restart_unit"), wordMod("host_report"),
				scriptedMod(e.script, func(m *manifest.Manifest) { m.Name = "zz_scripted" })}
		},
	})
	e.answer(pass)
	var slow atomic.Bool // unit_health's first check takes 30 seconds
	slow.Store(true)
	e.sd.onQuery = func() {
		if slow.CompareAndSwap(true, false) {
			e.clock.Advance(30 * time.Second)
		}
	}
	e.step()
	if got := e.report("zz_scripted").recipe.LastCheckAt; !got.Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("zz_scripted first checked at %s, want 30s, behind unit_health", got.Sub(t0))
	}
	for e.clock.Now().Before(t0.Add(10 * time.Minute)) {
		e.after(e.loop.untilNext())
	}
	uh, zz := e.report("unit_health").recipe.LastCheckAt, e.report("zz_scripted").recipe.LastCheckAt
	if !uh.Equal(t0.Add(10*time.Minute)) || !zz.Equal(uh) {
		t.Fatalf("unit_health checked at %s and zz_scripted at %s, want both at 10m", uh.Sub(t0), zz.Sub(t0))
	}
}

// TestAfterChecks: the agent's hook (it gives the checks' garbage back to the OS) runs once after a
// step that checked something, and not after a step with nothing due.
func TestAfterChecks(t *testing.T) {
	e := newEnv(t, setup{
		mods: func(e *env) []vocabtest.Module {
			return []vocabtest.Module{recipeMod("unit_health", interval("10m")), wordMod("restart_unit"), wordMod("host_report"),
				scriptedMod(e.script, func(m *manifest.Manifest) { m.Name = "zz_scripted" })}
		},
	})
	e.answer(pass)
	calls := 0
	e.loop.cfg.AfterChecks = func() { calls++ }
	e.step() // both due: one call for the step, not one per recipe
	if calls != 1 {
		t.Fatalf("%d calls after the first step, want 1", calls)
	}
	e.after(time.Minute) // nothing due
	if calls != 1 {
		t.Fatalf("%d calls after a step with nothing due, want still 1", calls)
	}
	for e.clock.Now().Before(t0.Add(10 * time.Minute)) {
		e.after(e.loop.untilNext())
	}
	if calls < 2 {
		t.Fatalf("%d calls after the checks at 5 and 10 minutes, want more than 1", calls)
	}
}
