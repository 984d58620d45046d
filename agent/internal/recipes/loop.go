package recipes

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// New opens the loop's state, reads every ledger and case, records the attempts a crash interrupted,
// and loads the vocabulary's recipes.
func New(cfg Config) (*Loop, error) {
	if cfg.Vocab == nil || cfg.Runner == nil || cfg.Policy == nil || cfg.Dir == "" {
		return nil, errcode.New(errcode.UsageInvalid, "the recipe loop needs a vocabulary, a runner, a policy and a state folder")
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

// Step follows the vocabulary and ticks every recipe that is due. Every recipe it checks is next due
// its interval after the step began, not after its own check: recipes checked together stay due
// together (the 10-minute one on every other 5-minute one), so they keep sharing one worker start
// instead of drifting apart by the time each check takes (host/RATIONALE.md, Footprint).
func (l *Loop) Step(ctx context.Context) {
	start := l.clock.Now()
	l.sync(start)
	names := make([]string, 0, len(l.recipes))
	for n := range l.recipes {
		names = append(names, n)
	}
	sort.Strings(names)
	checked := false
	defer func() {
		if checked && l.cfg.AfterChecks != nil {
			l.cfg.AfterChecks()
		}
	}()
	for _, n := range names {
		r := l.recipes[n]
		now := l.clock.Now()
		if ctx.Err() != nil {
			return
		}
		if r.state == channel.RecipeNotApplicable || now.Before(r.next) {
			continue
		}
		l.tick(ctx, r, now, start)
		l.publish(r)
		checked = true
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
		if len(l.cfg.Policy.Names) == 0 {
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
