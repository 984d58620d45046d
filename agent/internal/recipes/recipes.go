// Package recipes is the agent's self-healing loop. It runs every recipe of the verified vocabulary on
// the recipe's own interval, repairs what the recipe's repair word can, under the job lock and a fixed
// budget, and opens a case for a person when the budget is spent. It runs on every agent, paired with a
// plane or not, and nothing on the wire can start, stop or arm a recipe: they come only from the signed
// statement, and an operator holds one with a marker file.
//
// The rules, for one recipe (see agent/RATIONALE.md for why):
//
//   - A check answers pass, fail or unknown. Unknown never repairs and never counts.
//   - A repair runs only after two consecutive failing ticks. A failing run gets at most three attempts,
//     waiting 0, 10 and 30 minutes (each from the attempt before), each due on the first tick at or
//     after its wait.
//   - The first failing tick after the third attempt escalates: it opens one case for the recipe, and
//     further failing ticks are notes on it. A recipe without a repair escalates on its second failing
//     tick. The case closes only when the check passes.
//   - Repairs take the job lock without waiting; a tick that cannot is ledgered as busy and the attempt
//     waits for the next tick.
//   - hold/<recipe> in the config folder holds a recipe, if hold/ is root's and writable by root alone.
//   - In report-only mode (a compiled constant) an attempt is ledgered and runs nothing, and every rule
//     counts exactly as if it had run.
//   - Everything is ledgered in <state>/recipes/ledger/<recipe>.jsonl, an attempt before it starts, and
//     the state is a fold of the ledger, so a repair that kills the agent is a counted, interrupted
//     attempt when it starts again.
package recipes

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/joblock"
	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/agent/redact"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// ReportOnly is compiled in, so changing it takes a release: in report-only mode an attempt is ledgered
// and runs nothing, and every rule counts exactly as if it had run.
const ReportOnly = false

// Modes a case body names.
const (
	ModeRepair     = "repair"
	ModeReportOnly = "report-only"
	ModeCheckOnly  = "check-only" // the recipe has no repair
)

// failingTicks is how many consecutive failing ticks a repair waits for.
const failingTicks = 2

// attemptWaits are the waits before each attempt of a failing run, the first from the tick that met
// the two-tick rule, each later one from the attempt before. Their number is the budget.
var attemptWaits = [...]time.Duration{0, 10 * time.Minute, 30 * time.Minute}

// maxWait bounds the loop's sleep, so the recipes of a new statement start within a minute even when
// nothing wakes the loop (the daemon does, when it loads one).
const maxWait = time.Minute

// HostReportWord is the word whose output a case body carries, when the vocabulary has it.
const HostReportWord = "host_report"

// Config is what the loop works with.
type Config struct {
	Vocab *vocab.Vocabulary
	// Runner loads checks and prepares and runs repair words, exactly as for jobs (vocabulary, policy,
	// redaction). Its LockFile is the job lock, and its PolicyFile the node's policy.
	Runner *runner.Runner
	// Dir is the loop's state folder (<state>/recipes): ledger/, cases/ and case_seq.
	Dir string
	// ConfigDir is the agent's config folder, where hold/<recipe> markers live; "" means no holds.
	ConfigDir string
	// AgentDigest is the sha256 of the running agent binary, for scope release; "" fits no release.
	AgentDigest string
	// Platform is this machine's "<os>-<arch>"; "" is the running one's.
	Platform string
	Clock    Clock
	Log      *slog.Logger
}

// Loop runs the recipes. Report and Delivered are safe to call from any goroutine; Run (or Step) from
// one at a time.
type Loop struct {
	cfg        Config
	clock      Clock
	log        *slog.Logger
	reportOnly bool
	holdOwner  uint32 // who must own hold/: root; tests on a machine where they are not root change it
	ledgers    string
	cases      caseStore
	onStep     func() // tests: called after every step of Run
	wake       chan struct{}

	// Owned by the goroutine that steps.
	recipes map[string]*recipe
	ref     channel.StatementRef
	synced  bool

	mu      sync.Mutex
	reports map[string]channel.RecipeReport
	files   map[string]*caseFile
}

// recipe is one recipe as the loop runs it.
type recipe struct {
	name   string
	def    vocab.Recipe
	ledger ledger
	st     runState
	state  string // channel.RecipeActive, RecipeNotApplicable or RecipeHeld
	reason string // why it is not applicable, or held
	next   time.Time

	verdict, detail string // what the last tick saw, ledgered or not
	checkedAt       time.Time
}

// New opens the loop's state, reads every ledger and case, records the attempts a crash interrupted,
// and loads the vocabulary's recipes.
func New(cfg Config) (*Loop, error) {
	if cfg.Vocab == nil || cfg.Runner == nil || cfg.Dir == "" {
		return nil, errcode.New(errcode.UsageInvalid, "the recipe loop needs a vocabulary, a runner and a state folder")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Platform == "" {
		cfg.Platform = runtime.GOOS + "-" + runtime.GOARCH
	}
	l := &Loop{
		cfg: cfg, clock: cfg.Clock, log: cfg.Log, reportOnly: ReportOnly,
		ledgers: filepath.Join(cfg.Dir, "ledger"), cases: caseStore{dir: filepath.Join(cfg.Dir, "cases")},
		recipes: map[string]*recipe{}, reports: map[string]channel.RecipeReport{}, wake: make(chan struct{}, 1),
	}
	for _, d := range []string{cfg.Dir, l.ledgers, l.cases.dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create %s", d)
		}
	}
	files, problems, err := l.cases.load()
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		l.log.Error("case file skipped", "err", p)
	}
	l.files = files
	l.sync(l.clock.Now())
	return l, nil
}

// Run steps the loop until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	for {
		l.Step(ctx)
		if l.onStep != nil {
			l.onStep()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-l.clock.After(l.untilNext()):
		case <-l.wake:
		}
	}
}

// Wake makes Run step at once: the daemon calls it when the vocabulary changed, so a new statement's
// recipes start now rather than within maxWait. It never blocks.
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Step follows the vocabulary and ticks every recipe that is due.
func (l *Loop) Step(ctx context.Context) {
	l.sync(l.clock.Now())
	names := make([]string, 0, len(l.recipes))
	for n := range l.recipes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := l.recipes[n]
		now := l.clock.Now()
		if ctx.Err() != nil {
			return
		}
		if r.state == channel.RecipeNotApplicable || now.Before(r.next) {
			continue
		}
		l.tick(ctx, r, now)
		l.publish(r)
	}
}

func (l *Loop) untilNext() time.Duration {
	now, wait := l.clock.Now(), maxWait
	for _, r := range l.recipes {
		if r.state != channel.RecipeNotApplicable {
			wait = min(wait, r.next.Sub(now))
		}
	}
	return max(wait, 0)
}

// sync follows the vocabulary: a new recipe is loaded (its ledger replayed), every recipe takes its
// manifest from the new statement and has its scope judged again (the statement may pin another agent),
// and one that left is dropped (its last case keeps riding).
func (l *Loop) sync(now time.Time) {
	ref := l.cfg.Vocab.Ref()
	if l.synced && ref == l.ref {
		return
	}
	l.synced, l.ref = true, ref
	seen := map[string]bool{}
	for _, def := range l.cfg.Vocab.Recipes() {
		name := def.Manifest.Name
		seen[name] = true
		r := l.recipes[name]
		if r == nil {
			r = &recipe{name: name, ledger: ledger{path: ledgerPath(l.ledgers, name)}, next: now}
			l.replay(r, now)
			l.recipes[name] = r
		}
		r.def = def
		ok, why := l.fits(def.Manifest)
		switch {
		case !ok && (r.state != channel.RecipeNotApplicable || r.reason != why):
			r.state, r.reason = channel.RecipeNotApplicable, why
			_ = l.record(r, Event{At: now, Event: EventNotApplicable, Reason: why}, true)
			l.log.Info("recipe not applicable on this machine", "recipe", name, "reason", why)
		case ok && r.state != channel.RecipeActive && r.state != channel.RecipeHeld:
			r.state, r.reason, r.next = channel.RecipeActive, "", now
		}
		l.publish(r)
	}
	for name := range l.recipes {
		if !seen[name] {
			delete(l.recipes, name)
			l.mu.Lock()
			delete(l.reports, name)
			l.mu.Unlock()
		}
	}
}

// replay folds the recipe's ledger into its state and records the attempt a crash interrupted.
func (l *Loop) replay(r *recipe, now time.Time) {
	events, skipped, err := r.ledger.read()
	if err != nil {
		l.log.Error("recipe ledger unreadable; starting the recipe afresh", "recipe", r.name, "err", err)
	}
	if skipped > 0 {
		l.log.Warn("recipe ledger lines skipped", "recipe", r.name, "lines", skipped)
	}
	for _, ev := range events {
		r.st.apply(ev)
	}
	r.verdict, r.detail, r.checkedAt = r.st.verdict, r.st.detail, r.st.checkedAt
	if a, ok := r.st.interrupted(); ok {
		_ = l.record(r, Event{At: now, Event: EventOutcome, N: a.start.N, Outcome: OutcomeInterrupted,
			Code: errcode.RecipeInterrupted, Message: "the agent stopped while this repair ran; counted as failed"}, true)
		l.log.Warn("a repair was interrupted by the agent stopping; counted as a failed attempt", "recipe", r.name, "attempt", a.start.N)
	}
}

// record writes ev to the recipe's ledger (unless write is false) and folds it into the state. What
// cannot be written did not happen: the state follows the ledger, never the other way round.
func (l *Loop) record(r *recipe, ev Event, write bool) error {
	if write {
		if err := r.ledger.append(ev); err != nil {
			l.log.Error("cannot write the recipe ledger", "recipe", r.name, "event", ev.Event, "err", err)
			return err
		}
	}
	r.st.apply(ev)
	return nil
}

// fits judges the recipe's scope against this machine (agent/RATIONALE.md defines each).
func (l *Loop) fits(m *manifest.Manifest) (bool, string) {
	switch m.Recipe.Scope {
	case "any", "host":
		return true, ""
	case "site":
		if len(policy.Load(l.cfg.Runner.PolicyFile).Names) == 0 {
			return false, "scope site: the node's policy lists no names it serves"
		}
		return true, ""
	case "release":
		pinned, ok := l.cfg.Vocab.AgentDigest(l.cfg.Platform)
		switch {
		case !ok:
			return false, "scope release: the statement pins no agent for " + l.cfg.Platform
		case l.cfg.AgentDigest == "" || pinned != l.cfg.AgentDigest:
			return false, "scope release: this agent binary is not the one the statement pins for " + l.cfg.Platform
		}
		return true, ""
	}
	return false, fmt.Sprintf("scope %q is not one this agent knows", m.Recipe.Scope)
}

// hold reports whether an operator holds the recipe, and why a marker was ignored.
func (l *Loop) hold(name string) (held bool, ignored string) {
	if l.cfg.ConfigDir == "" {
		return false, ""
	}
	dir := filepath.Join(l.cfg.ConfigDir, "hold")
	if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
		return false, ""
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false, dir + " is not a directory"
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return false, dir + ": its owner cannot be read"
	case st.Uid != l.holdOwner:
		return false, fmt.Sprintf("%s is owned by uid %d, not root", dir, st.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return false, fmt.Sprintf("%s is writable by group or others (mode %04o)", dir, fi.Mode().Perm())
	}
	return true, ""
}

// tick runs one recipe once and applies the rules to its verdict.
func (l *Loop) tick(ctx context.Context, r *recipe, now time.Time) {
	r.next = now.Add(r.def.Manifest.Recipe.CheckInterval())
	held, ignored := l.hold(r.name)
	switch {
	case ignored != "" && !r.st.ignored:
		_ = l.record(r, Event{At: now, Event: EventHoldIgnored, Reason: ignored}, true)
		l.log.Warn("hold marker ignored", "recipe", r.name, "reason", ignored)
	case ignored == "":
		r.st.ignored = false // a marker that goes and comes back is ledgered again
	}
	if held {
		if !r.st.held {
			_ = l.record(r, Event{At: now, Event: EventHeld, Reason: "hold/" + r.name}, true)
			l.log.Info("recipe held by the operator", "recipe", r.name)
		}
		r.state, r.reason = channel.RecipeHeld, "held by hold/"+r.name
		return
	}
	r.st.held, r.state, r.reason = false, channel.RecipeActive, ""

	v := l.check(ctx, r)
	r.verdict, r.detail, r.checkedAt = v.verdict, v.detail, now
	quiet := v.verdict == r.st.verdict && v.verdict != channel.VerdictFail // a pass after a pass, an unknown after an unknown
	if err := l.record(r, Event{At: now, Event: EventCheck, Verdict: v.verdict, Detail: v.detail}, !quiet); err != nil {
		return
	}
	l.mu.Lock()
	open := l.files[r.name].open()
	l.mu.Unlock()
	switch {
	case v.verdict == channel.VerdictUnknown:
	case v.verdict == channel.VerdictPass:
		if open {
			l.closeCase(r, now)
		}
	case open:
		l.note(r, v, now)
	case r.st.fails < failingTicks:
	case !repairable(r.def.Manifest) || len(r.st.attempts) >= len(attemptWaits):
		l.escalate(ctx, r, v, now)
	case r.st.due(now):
		l.attempt(ctx, r, v, now)
	}
}

func repairable(m *manifest.Manifest) bool { return m.Recipe.Repair != "" && !m.Recipe.NoRepair }

// verdict is a check's answer on this node, this tick. Repair params come only from here.
type verdict struct {
	verdict, detail string
	repair          json.RawMessage
}

func unknown(format string, args ...any) verdict {
	d, _ := redact.Text(fmt.Sprintf(format, args...))
	return verdict{verdict: channel.VerdictUnknown, detail: capText(d)}
}

// check runs the recipe's module with its declaration. A check that cannot run, or answers no
// verdict, is unknown: the agent never guesses.
func (l *Loop) check(ctx context.Context, r *recipe) verdict {
	decl, err := r.def.Manifest.Declaration(policy.Load(l.cfg.Runner.PolicyFile).Names)
	if err != nil {
		return unknown("the recipe's declaration does not fit its own params schema: %v", err)
	}
	mod, err := l.cfg.Runner.Load(ctx, r.def)
	if err != nil {
		return unknown("the check cannot be loaded: %s: %v", errcode.Code(err), err)
	}
	res := mod.Run(ctx, decl)
	if res.Outcome != wasm.Completed {
		return unknown("the check did not complete: %s: %s", res.Code, res.Message)
	}
	return parseVerdict(res.Output)
}

// parseVerdict reads a check's output. Anything but a verdict is unknown; the detail is redacted and
// capped; repair params are kept only on a failing verdict.
func parseVerdict(output []byte) verdict {
	var out struct {
		Verdict string          `json:"verdict"`
		Detail  string          `json:"detail"`
		Repair  json.RawMessage `json:"repair"`
	}
	if err := json.Unmarshal(output, &out); err != nil {
		return unknown("the check answered no verdict: %v", err)
	}
	switch out.Verdict {
	case channel.VerdictPass, channel.VerdictFail, channel.VerdictUnknown:
	default:
		return unknown("the check answered %q, not pass, fail or unknown", capText(out.Verdict))
	}
	detail, _ := redact.Text(out.Detail)
	v := verdict{verdict: out.Verdict, detail: capText(detail)}
	if out.Verdict == channel.VerdictFail && len(out.Repair) > 0 && string(out.Repair) != "null" {
		v.repair = out.Repair
	}
	return v
}

// attempt makes the run's next repair attempt: under the job lock, ledgered before it starts.
func (l *Loop) attempt(ctx context.Context, r *recipe, v verdict, now time.Time) {
	word := r.def.Manifest.Recipe.Repair
	n := len(r.st.attempts) + 1
	mode := ModeRepair
	if l.reportOnly {
		mode = ModeReportOnly
	}
	params, prep, refusal := l.prepareRepair(ctx, r, v)
	lock, err := joblock.TryAcquire(l.cfg.Runner.LockFile)
	if errcode.Has(err, errcode.AgentBusy) {
		_ = l.record(r, Event{At: now, Event: EventBusy, N: n, Word: word}, true)
		l.log.Info("repair due but the job lock is held; trying next tick", "recipe", r.name, "attempt", n)
		return
	}
	if err != nil && refusal == nil {
		refusal = err
	}
	defer lock.Release()
	if err := l.record(r, Event{At: now, Event: EventAttempt, N: n, Mode: mode, Word: word, Params: params}, true); err != nil {
		return // never run a repair the ledger does not hold
	}
	end := Event{Event: EventOutcome, N: n}
	switch {
	case refusal != nil:
		e := errcode.From(refusal, errcode.InternalError)
		msg, _ := redact.Text(e.Message)
		end.Outcome, end.Code, end.Message = OutcomeFailed, e.Code, capText(msg)
	case l.reportOnly:
		end.Outcome = OutcomeReportOnly
	default:
		l.log.Info("repair started", "recipe", r.name, "attempt", n, "word", word)
		res := prep.Run(ctx, params)
		end.DurationMS = res.DurationMS
		if res.Outcome == channel.OutcomeCompleted {
			end.Outcome = OutcomeRepaired
		} else {
			end.Outcome, end.Code, end.Message = OutcomeFailed, res.Code, capText(res.Message)
		}
	}
	end.At = l.clock.Now()
	_ = l.record(r, end, true)
	l.log.Info("repair attempt ended", "recipe", r.name, "attempt", n, "outcome", end.Outcome, "code", end.Code)
}

// prepareRepair gives the params and the prepared repair word, or why the attempt may not run. The
// repair word passes what a job's word passes (vocabulary, policy), and its params its params schema.
func (l *Loop) prepareRepair(ctx context.Context, r *recipe, v verdict) (json.RawMessage, *runner.Prepared, error) {
	rc := r.def.Manifest.Recipe
	params := v.repair
	if rc.NodeDerived {
		// Only this tick's own check on this node may supply them: not a file, not the wire, not an
		// earlier tick's answer in the ledger, not the recipe's declaration.
		if !isObject(params) {
			return params, nil, errcode.New(errcode.RecipeParamsNotDerived,
				"%s is node_derived and its check gave no repair params of its own; nothing else may supply them", r.name)
		}
	} else if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	prep, err := l.cfg.Runner.Prepare(ctx, rc.Repair)
	if err != nil {
		return params, nil, err
	}
	if err := prep.Word.Manifest.CheckParams(params); err != nil {
		return params, nil, err
	}
	return params, prep, nil
}

func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(b) > 0 && json.Unmarshal(b, &m) == nil && m != nil
}

// escalate opens the recipe's case, with its body composed once, now.
func (l *Loop) escalate(ctx context.Context, r *recipe, v verdict, now time.Time) {
	id, err := l.cases.nextID()
	if err != nil {
		l.log.Error("cannot open a case", "recipe", r.name, "err", err)
		return
	}
	mode := l.mode(r)
	var why string
	switch mode {
	case ModeCheckOnly:
		why = "failing, with no repair"
	case ModeReportOnly:
		why = fmt.Sprintf("failing; %d repairs recorded in report-only mode, none ran", len(r.st.attempts))
	default:
		why = fmt.Sprintf("still failing after %d repairs (%s)", len(r.st.attempts), r.def.Manifest.Recipe.Repair)
	}
	c := &caseFile{Case: channel.CaseReport{ID: id, Recipe: r.name, State: channel.CaseOpen, OpenedAt: now,
		Summary: capText(r.name + " " + why + ": " + v.detail)}}
	c.Body = l.body(ctx, r, mode)
	l.mu.Lock()
	err = l.cases.save(c)
	if err == nil {
		l.files[r.name] = c
	}
	l.mu.Unlock()
	if err != nil {
		l.log.Error("cannot open a case", "recipe", r.name, "err", err)
		return
	}
	_ = l.record(r, Event{At: now, Event: EventEscalation, Case: id, Detail: c.Case.Summary}, true)
	l.log.Warn("recipe escalated: a case is open", "recipe", r.name, "case", id, "summary", c.Case.Summary)
}

func (l *Loop) mode(r *recipe) string {
	switch {
	case !repairable(r.def.Manifest):
		return ModeCheckOnly
	case l.reportOnly:
		return ModeReportOnly
	}
	return ModeRepair
}

// note adds a further failing tick to the open case.
func (l *Loop) note(r *recipe, v verdict, now time.Time) {
	l.mu.Lock()
	c := l.files[r.name]
	c.LastSeq++
	c.Notes = append(c.Notes, channel.CaseNote{Seq: c.LastSeq, At: now, Text: capText(v.detail)})
	if over := len(c.Notes) - channel.MaxCaseNotes; over > 0 {
		c.Notes = slices.Delete(c.Notes, 0, over) // the plane sees the gap in seq
	}
	err := l.cases.save(c)
	id, seq := c.Case.ID, c.LastSeq
	l.mu.Unlock()
	if err != nil {
		l.log.Error("cannot note the case", "recipe", r.name, "case", id, "err", err)
	}
	_ = l.record(r, Event{At: now, Event: EventEscalationNote, Case: id, Seq: seq, Detail: v.detail}, true)
}

// closeCase closes the open case: the check passes.
func (l *Loop) closeCase(r *recipe, now time.Time) {
	l.mu.Lock()
	c := l.files[r.name]
	c.Case.State, c.Case.ClosedAt = channel.CaseClosed, now
	err := l.cases.save(c)
	id := c.Case.ID
	l.mu.Unlock()
	if err != nil {
		l.log.Error("cannot close the case", "recipe", r.name, "case", id, "err", err)
	}
	_ = l.record(r, Event{At: now, Event: EventEscalationClosed, Case: id}, true)
	l.log.Info("case closed: the check passes", "recipe", r.name, "case", id)
}

// publish makes the recipe's state visible to Report.
func (l *Loop) publish(r *recipe) {
	rep := channel.RecipeReport{Name: r.name, Version: r.def.Manifest.Version, Digest: r.def.Module, State: r.state,
		LastVerdict: r.verdict, LastCheckAt: r.checkedAt, Detail: r.detail}
	if r.state != channel.RecipeActive {
		rep.Detail = capText(r.reason)
	}
	l.mu.Lock()
	l.reports[r.name] = rep
	l.mu.Unlock()
}

// Report is what a claim says about the node's recipes and cases: every recipe with its state and last
// verdict, and each recipe's most recent case with its body and notes until a claim carrying them
// succeeds (Delivered).
func (l *Loop) Report() ([]channel.RecipeReport, []channel.CaseReport) {
	l.mu.Lock()
	defer l.mu.Unlock()
	recipes := make([]channel.RecipeReport, 0, len(l.reports))
	for _, r := range l.reports {
		recipes = append(recipes, r)
	}
	sort.Slice(recipes, func(i, j int) bool { return recipes[i].Name < recipes[j].Name })
	if len(recipes) > channel.MaxRecipes {
		recipes = recipes[:channel.MaxRecipes]
	}
	var cases []channel.CaseReport
	for _, c := range l.files {
		cases = append(cases, c.report())
	}
	sortCases(cases)
	if len(cases) > channel.MaxCases {
		cases = cases[:channel.MaxCases]
	}
	return recipes, cases
}

// Delivered records that a claim carrying cases succeeded: their bodies and notes need not ride again.
// A newer case or note than the one delivered keeps riding.
func (l *Loop) Delivered(cases []channel.CaseReport) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range cases {
		c := l.files[d.Recipe]
		if c == nil || c.Case.ID != d.ID {
			continue
		}
		changed := false
		if d.Body != nil && !c.BodySent {
			c.BodySent, changed = true, true
		}
		last := 0
		for _, n := range d.Notes {
			last = max(last, n.Seq)
		}
		if kept := slices.DeleteFunc(c.Notes, func(n channel.CaseNote) bool { return n.Seq <= last }); len(kept) != len(c.Notes) {
			c.Notes, changed = kept, true
		}
		if changed {
			if err := l.cases.save(c); err != nil {
				l.log.Error("cannot record a delivered case", "case", c.Case.ID, "err", err)
			}
		}
	}
}

// body composes a case body: the mode, the attempts that spent the budget, a fresh host report, the
// vocabulary and the recipes, each capped, the whole within channel.MaxCaseBody.
func (l *Loop) body(ctx context.Context, r *recipe, mode string) *channel.CaseBody {
	b := &channel.CaseBody{Mode: mode, Attempts: []json.RawMessage{}, HostReport: l.hostReport(ctx),
		Vocabulary: l.cfg.Vocab.Report()}
	for _, a := range r.st.attempts {
		rec := map[string]any{"n": a.start.N, "at": a.start.At, "mode": a.start.Mode, "word": a.start.Word,
			"params": a.start.Params, "outcome": a.end.Outcome, "ended_at": a.end.At, "duration_ms": a.end.DurationMS}
		if a.end.Code != "" {
			rec["code"], rec["message"] = a.end.Code, capText(a.end.Message)
		}
		raw, err := json.Marshal(rec)
		if err == nil {
			raw, _, err = redact.JSON(raw)
		}
		if err != nil {
			raw = json.RawMessage(`{"omitted": "this attempt could not be encoded"}`)
		}
		b.Attempts = append(b.Attempts, raw)
	}
	b.Recipes, _ = l.Report()
	for i := range b.Recipes {
		b.Recipes[i].Detail = capText(b.Recipes[i].Detail)
	}
	fitBody(b)
	return b
}

// hostReport runs the host_report word, when the vocabulary has it and the policy accepts it. It takes
// no job lock: it only looks, and a case must not wait on a job.
func (l *Loop) hostReport(ctx context.Context) json.RawMessage {
	prep, err := l.cfg.Runner.Prepare(ctx, HostReportWord)
	if err != nil {
		return omitted("host_report unavailable: " + errcode.Code(err))
	}
	res := prep.Run(ctx, json.RawMessage(`{}`))
	if res.Outcome != channel.OutcomeCompleted {
		return omitted("host_report " + string(res.Outcome) + ": " + res.Code)
	}
	return res.Output
}

func omitted(why string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"omitted": capText(why)})
	return b
}

// fitBody shrinks a body over channel.MaxCaseBody: the host report goes first, then the vocabulary and
// the recipe list are cut from their ends. The attempts, each capped already, always stay.
func fitBody(b *channel.CaseBody) {
	size := func() int { raw, _ := json.Marshal(b); return len(raw) }
	if size() <= channel.MaxCaseBody {
		return
	}
	b.HostReport = omitted(fmt.Sprintf("host_report output of %d bytes did not fit the case body", len(b.HostReport)))
	for size() > channel.MaxCaseBody && len(b.Vocabulary) > 0 {
		b.Vocabulary = b.Vocabulary[:len(b.Vocabulary)/2]
	}
	for size() > channel.MaxCaseBody && len(b.Recipes) > 0 {
		b.Recipes = b.Recipes[:len(b.Recipes)/2]
	}
}

var _ interface {
	Report() ([]channel.RecipeReport, []channel.CaseReport)
	Delivered([]channel.CaseReport)
	Wake()
} = (*Loop)(nil)
