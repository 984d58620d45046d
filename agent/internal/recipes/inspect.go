package recipes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Summary is one recipe as the loop's state folder tells it, for an operator at the console.
type Summary struct {
	Name         string              `json:"name"`
	LastVerdict  string              `json:"last_verdict,omitempty"`
	LastCheckAt  time.Time           `json:"last_check_at,omitzero"` // the last ledgered check
	Detail       string              `json:"detail,omitempty"`
	FailingTicks int                 `json:"failing_ticks"` // of the current failing run
	Attempts     int                 `json:"attempts"`      // of the current failing run
	LastEvent    Event               `json:"last_event"`
	Case         *channel.CaseReport `json:"case,omitempty"` // the most recent case, without body or notes
}

// Inspect reads the loop's state folder (<state>/recipes) and changes nothing: every recipe that has
// a ledger or a case, by name.
func Inspect(dir string) ([]Summary, error) {
	names := map[string]bool{}
	for _, sub := range []struct{ dir, ext string }{{"ledger", ".jsonl"}, {"cases", ".json"}} {
		entries, err := os.ReadDir(filepath.Join(dir, sub.dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", filepath.Join(dir, sub.dir))
		}
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), sub.ext); ok && !strings.HasPrefix(n, ".") {
				names[n] = true
			}
		}
	}
	var cases map[string]*caseFile
	if _, err := os.Stat(filepath.Join(dir, "cases")); err == nil {
		var err error
		if cases, _, err = (caseStore{dir: filepath.Join(dir, "cases")}).load(); err != nil {
			return nil, err
		}
	}
	out := []Summary{}
	for n := range names {
		events, err := History(dir, n)
		if err != nil {
			return nil, err
		}
		var st runState
		s := Summary{Name: n}
		for _, ev := range events {
			st.apply(ev)
			s.LastEvent = ev
		}
		s.LastVerdict, s.LastCheckAt, s.Detail, s.FailingTicks, s.Attempts = st.verdict, st.checkedAt, st.detail, st.fails, len(st.attempts)
		if c := cases[n]; c != nil {
			r := c.Case
			s.Case = &r
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// History returns a recipe's ledger, oldest first.
func History(dir, recipe string) ([]Event, error) {
	events, _, err := ledger{path: ledgerPath(filepath.Join(dir, "ledger"), recipe)}.read()
	return events, err
}
