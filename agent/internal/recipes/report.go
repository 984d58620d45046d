package recipes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/redact"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

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
		if u := l.unconfigured(r); u != "" {
			why = "failing; " + u
		}
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
	case !l.repairable(r):
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
	} else if u := l.unconfigured(r); u != "" && r.verdict == channel.VerdictFail {
		rep.Detail = capText(r.detail + "; " + u)
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
