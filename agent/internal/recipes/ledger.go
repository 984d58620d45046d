package recipes

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Ledger events, one JSON object a line in <state>/recipes/ledger/<recipe>.jsonl.
const (
	EventCheck            = "check"             // a verdict (not a pass after a pass, nor an unknown after an unknown)
	EventAttempt          = "attempt"           // a repair about to start, written before it does
	EventOutcome          = "outcome"           // how that attempt ended
	EventHeld             = "held"              // an operator's hold was found; the recipe stops ticking
	EventHoldIgnored      = "hold_ignored"      // a hold marker whose directory is not root's alone
	EventBusy             = "busy"              // a repair was due but a job held the job lock
	EventEscalation       = "escalation"        // the budget is spent: a case opened
	EventEscalationNote   = "escalation_note"   // a further failing tick on the open case
	EventEscalationClosed = "escalation_closed" // the check passed: the case closed
	EventNotApplicable    = "not_applicable"    // the recipe's scope does not fit this machine
)

// Outcomes of an attempt.
const (
	OutcomeRepaired    = "repaired"    // the repair word completed
	OutcomeFailed      = "failed"      // it failed, or was refused before it ran
	OutcomeReportOnly  = "report-only" // report-only mode: nothing ran
	OutcomeInterrupted = "interrupted" // the agent stopped while it ran
)

// Event is one ledger line.
type Event struct {
	At         time.Time       `json:"at"`
	Event      string          `json:"event"`
	Verdict    string          `json:"verdict,omitempty"`
	Detail     string          `json:"detail,omitempty"`
	N          int             `json:"n,omitempty"`    // attempt number within the failing run
	Mode       string          `json:"mode,omitempty"` // attempt: repair or report-only
	Word       string          `json:"word,omitempty"`
	Params     json.RawMessage `json:"params,omitempty"`
	Outcome    string          `json:"outcome,omitempty"`
	Code       string          `json:"code,omitempty"`
	Message    string          `json:"message,omitempty"`
	DurationMS int64           `json:"duration_ms,omitempty"`
	Case       uint64          `json:"case,omitempty"`
	Seq        int             `json:"seq,omitempty"`
	Reason     string          `json:"reason,omitempty"`
}

// maxLedger is where a ledger rotates: the file moves to <name>.jsonl.1 (replacing the one before) and
// a new one starts. Both are read at start, so a failing run that spans a rotation is still whole.
const maxLedger = 1 << 20

// ledger is one recipe's JSON-lines file.
type ledger struct{ path string }

// append writes ev as one line and syncs it to disk before returning: an attempt must be on disk before
// its repair starts, or a repair that kills the agent would leave no trace.
func (l ledger) append(ev Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "ledger event does not encode")
	}
	if fi, err := os.Stat(l.path); err == nil && fi.Size()+int64(len(line)) > maxLedger {
		if err := os.Rename(l.path, l.path+".1"); err != nil {
			return errcode.Wrap(err, errcode.IOFailed, "cannot rotate ledger %s", l.path)
		}
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot open ledger %s", l.path)
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot write ledger %s", l.path)
	}
	return nil
}

// read returns the ledger's events, oldest first. A line that does not decode (torn by a crash in the
// middle of a write) is skipped and counted.
func (l ledger) read() (events []Event, skipped int, err error) {
	for _, p := range []string{l.path + ".1", l.path} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, errcode.Wrap(err, errcode.IOFailed, "cannot read ledger %s", p)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), maxLedger)
		for sc.Scan() {
			var ev Event
			if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Event == "" {
				skipped++
				continue
			}
			events = append(events, ev)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, 0, errcode.Wrap(err, errcode.IOFailed, "cannot read ledger %s", p)
		}
	}
	return events, skipped, nil
}

// ledgerPath is a recipe's ledger; recipe names are manifest names ([a-z][a-z0-9_]*), safe as file names.
func ledgerPath(dir, recipe string) string { return filepath.Join(dir, recipe+".jsonl") }
