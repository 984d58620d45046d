package recipes

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/joblock"
	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/redact"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

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
