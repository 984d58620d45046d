package recipes

import (
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// runState is what the rules need to know about one recipe. It is a fold of the recipe's ledger: the
// loop applies every event it writes, and at start it applies the whole ledger, so a restart resumes a
// failing run exactly where it was.
type runState struct {
	verdict   string // the last verdict seen
	detail    string
	checkedAt time.Time
	fails     int       // consecutive failing ticks of the current failing run
	attempts  []attempt // the current failing run's attempts
	held      bool      // the last hold was ledgered and no check came after it
	ignored   bool      // an ignored hold was ledgered and not cleared since
}

// attempt is one repair attempt: its ledger line and, once it ended, its outcome line.
type attempt struct {
	start, end Event
}

func (a attempt) ended() bool { return a.end.Event != "" }

// apply folds one event into the state.
func (s *runState) apply(ev Event) {
	switch ev.Event {
	case EventCheck:
		s.verdict, s.detail, s.checkedAt, s.held = ev.Verdict, ev.Detail, ev.At, false
		switch ev.Verdict {
		case channel.VerdictPass:
			s.fails, s.attempts = 0, nil
		case channel.VerdictFail:
			s.fails++
		}
		// unknown never counts, and never breaks a run: it says nothing about the condition.
	case EventAttempt:
		s.attempts = append(s.attempts, attempt{start: ev})
	case EventOutcome:
		for i := range s.attempts {
			if s.attempts[i].start.N == ev.N && !s.attempts[i].ended() {
				s.attempts[i].end = ev
			}
		}
	case EventHeld:
		// An operator took over: the failing run ends, and a new one starts from scratch after the hold;
		// the first check after it is ledgered, whatever it says, so the ledger shows the hold ended.
		s.held, s.ignored, s.fails, s.attempts, s.verdict = true, false, 0, nil, ""
	case EventHoldIgnored:
		s.ignored = true
	}
}

// interrupted returns the attempt that started and never ended, if any.
func (s *runState) interrupted() (attempt, bool) {
	for _, a := range s.attempts {
		if !a.ended() {
			return a, true
		}
	}
	return attempt{}, false
}

// due reports whether the next attempt of the run may start at now: the first at once, each later one
// on the first tick at or after its wait, counted from the attempt before.
func (s *runState) due(now time.Time) bool {
	n := len(s.attempts)
	if n == 0 {
		return true
	}
	if n >= len(attemptWaits) {
		return false
	}
	return !now.Before(s.attempts[n-1].start.At.Add(attemptWaits[n]))
}
