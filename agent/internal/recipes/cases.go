package recipes

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// caseFile is a recipe's most recent case as the node keeps it, in <state>/recipes/cases/<recipe>.json:
// the summary, the body until a claim carrying it succeeded, and the notes the plane has not seen.
type caseFile struct {
	Case     channel.CaseReport `json:"case"` // Notes and Body are kept below, not here
	Body     *channel.CaseBody  `json:"body,omitempty"`
	BodySent bool               `json:"body_sent"`
	Notes    []channel.CaseNote `json:"notes,omitempty"` // not yet delivered
	LastSeq  int                `json:"last_seq"`
}

func (c *caseFile) open() bool { return c != nil && c.Case.State == channel.CaseOpen }

// report is the case as a claim carries it.
func (c *caseFile) report() channel.CaseReport {
	r := c.Case
	r.Notes, r.Body = nil, nil
	if len(c.Notes) > 0 {
		r.Notes = append([]channel.CaseNote(nil), c.Notes...)
	}
	if !c.BodySent {
		r.Body = c.Body
	}
	return r
}

// caseStore keeps the case files and the node's case counter.
type caseStore struct{ dir string }

func (s caseStore) path(recipe string) string { return filepath.Join(s.dir, recipe+".json") }
func (s caseStore) seqPath() string           { return filepath.Join(filepath.Dir(s.dir), "case_seq") }

// nextID returns the next case id of this node and records it before anyone sees it, so ids only grow,
// across restarts too.
func (s caseStore) nextID() (uint64, error) {
	var last uint64
	data, err := os.ReadFile(s.seqPath())
	switch {
	case err == nil:
		last, err = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return 0, errcode.Wrap(err, errcode.IOFailed, "%s is not a number", s.seqPath())
		}
	case !errors.Is(err, fs.ErrNotExist):
		return 0, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", s.seqPath())
	}
	next := last + 1
	if err := keys.ReplaceFile(s.seqPath(), []byte(strconv.FormatUint(next, 10)+"\n"), 0o600); err != nil {
		return 0, err
	}
	return next, nil
}

func (s caseStore) save(c *caseFile) error {
	data, err := json.Marshal(c)
	if err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "case %d does not encode", c.Case.ID)
	}
	return keys.ReplaceFile(s.path(c.Case.Recipe), data, 0o600)
}

// load reads every case file, whatever the current vocabulary: a recipe that left it keeps its last
// case riding, so nothing the plane should hear is dropped. A file that cannot be read or is damaged is
// left where it is and named in problems: the recipe's next case replaces it, and one bad file must not
// stop the agent.
func (s caseStore) load() (cases map[string]*caseFile, problems []error, err error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", s.dir)
	}
	out := map[string]*caseFile{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.dir, e.Name()))
		if err != nil {
			problems = append(problems, errcode.Wrap(err, errcode.IOFailed, "cannot read case file %s", e.Name()))
			continue
		}
		var c caseFile
		if err := json.Unmarshal(data, &c); err != nil || c.Case.Recipe != name || c.Case.ID == 0 {
			problems = append(problems, errcode.New(errcode.IOFailed, "case file %s is damaged", e.Name()))
			continue
		}
		out[name] = &c
	}
	return out, problems, nil
}

// capText cuts s to the channel's text cap at a character boundary.
func capText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	n := channel.MaxCaseText
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// sortCases orders case reports newest first, the order in which they are kept when over the cap.
func sortCases(cs []channel.CaseReport) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID > cs[j].ID })
}
