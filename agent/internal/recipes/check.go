package recipes

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/redact"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// tick runs one recipe once and applies the rules to its verdict; the recipe is next due its interval
// after base, when the step that ticks it began (or after now, should that step have outlasted an
// interval: a recipe is never checked twice in a row for a slow step).
func (l *Loop) tick(ctx context.Context, r *recipe, now, base time.Time) {
	every := r.def.Manifest.Recipe.CheckInterval()
	r.next = base.Add(every)
	if !r.next.After(now) {
		r.next = now.Add(every)
	}
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
	l.cfg.Metrics.RecipeVerdict(r.name, v.verdict)
	quiet := v.verdict == r.st.verdict && v.verdict != channel.VerdictFail // a pass after a pass, an unknown after an unknown
	if err := l.record(r, Event{At: now, Event: EventCheck, Verdict: v.verdict, Detail: v.detail}, !quiet); err != nil {
		return
	}
	// Logged once the ledger holds it, so whoever reads the log can read the ledger (an author's test does).
	l.log.Debug("recipe checked", "recipe", r.name, "verdict", v.verdict)
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
	case !l.repairable(r) || len(r.st.attempts) >= len(attemptWaits):
		l.escalate(ctx, r, v, now)
	case r.st.due(now):
		l.attempt(ctx, r, v, now)
	}
}

func repairable(m *manifest.Manifest) bool { return m.Recipe.Repair != "" && !m.Recipe.NoRepair }

// repairable says whether r repairs on this node: it names a repair word, and the word needs nothing
// this node has left unconfigured.
func (l *Loop) repairable(r *recipe) bool {
	return repairable(r.def.Manifest) && l.unconfigured(r) == ""
}

// unconfigured says why r's repair cannot run here although the recipe has one, or "": its word runs
// the node's renewal program (exec.pinned manifest.NodeRenewal) and the node's policy names none. Such
// a recipe only checks, and says so, rather than count attempts that could never run.
func (l *Loop) unconfigured(r *recipe) string {
	if !repairable(r.def.Manifest) {
		return ""
	}
	w, ok := l.cfg.Vocab.Word(r.def.Manifest.Recipe.Repair)
	if !ok {
		return ""
	}
	c, ok := w.Manifest.Capability(capv1.CapExecPinned)
	if !ok {
		return ""
	}
	for _, p := range c.Programs {
		if p.Path == manifest.NodeRenewal && l.cfg.Policy.Renewal == nil {
			return "repair not configured: the node's policy names no renewal program, so " + r.name + " only checks"
		}
	}
	return ""
}

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
	decl, err := r.def.Manifest.Declaration(l.cfg.Policy.Names)
	if err != nil {
		return unknown("the recipe's declaration does not fit its own params schema: %v", err)
	}
	mod, err := l.cfg.Runner.Load(ctx, r.def)
	if err != nil {
		return unknown("the check cannot be loaded: %s: %v", errcode.Code(err), err)
	}
	res := mod.Run(ctx, decl)
	for _, c := range res.Capabilities {
		l.cfg.Metrics.CapabilityCall(c.Cap, c.Allowed)
	}
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
