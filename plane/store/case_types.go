package store

import (
	"encoding/json"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// CaseState is whether a case is open or closed. Closed is final.
type CaseState string

const (
	CaseOpen   CaseState = channel.CaseOpen
	CaseClosed CaseState = channel.CaseClosed
)

// Who wrote a case note, or closed a case.
const (
	AuthorNode  = "node"
	AuthorPlane = "plane"
)

// Caps on cases. Those of one report are the wire's; MaxCaseNotesKept bounds what a case collects over
// its life (a failing tick every ten minutes for a week is about a thousand).
const (
	MaxCaseText      = channel.MaxCaseText
	MaxCaseNotes     = channel.MaxCaseNotes
	MaxCaseBody      = channel.MaxCaseBody
	MaxCases         = channel.MaxCases
	MaxCaseNotesKept = 1000
)

// Case is one escalation as the plane keeps it.
type Case struct {
	NodeID     string          `json:"node_id"`
	ID         int64           `json:"id"`
	Recipe     string          `json:"recipe"`
	State      CaseState       `json:"state"`
	OpenedAt   time.Time       `json:"opened_at"`           // as the node says
	ClosedAt   time.Time       `json:"closed_at,omitzero"`  // as the node says, or when the plane closed it
	ClosedBy   string          `json:"closed_by,omitempty"` // node, or plane when a newer case superseded it
	Summary    string          `json:"summary"`
	Body       json.RawMessage `json:"body,omitempty"`
	Notes      []CaseNote      `json:"notes,omitempty"`
	ReceivedAt time.Time       `json:"received_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// CaseNote is one note on a case: a further failing tick from the node, or the plane's own word.
type CaseNote struct {
	Author     string    `json:"author"`
	Seq        int64     `json:"seq"`
	At         time.Time `json:"at"`
	Text       string    `json:"text"`
	ReceivedAt time.Time `json:"received_at,omitzero"`
}

// CaseReport is one case as a claim reports it, already capped by the caller.
type CaseReport struct {
	ID       int64
	Recipe   string
	State    CaseState
	OpenedAt time.Time
	ClosedAt time.Time // set exactly when State is closed
	Summary  string
	Notes    []CaseNote      // the node's notes (Author is ignored)
	Body     json.RawMessage // nil when the claim carried none
}

type CaseIntakeParams struct {
	NodeID string
	Cases  []CaseReport
	Now    time.Time
	// MaxOpen caps the node's open cases; 0 means channel.MaxOpenCasesNode.
	MaxOpen int
	// ReopenWithin and Notify are as in IncidentReconcileParams: an incident whose condition comes back
	// within ReopenWithin (0: an hour) of clearing reopens, and each opened or reopened
	// incident gets one notification per webhook named in Notify.
	ReopenWithin time.Duration
	Notify       []string
}

// CaseResult is what intake did with one case.
type CaseResult string

const (
	CaseStored    CaseResult = "stored"    // a new id was recorded
	CaseUpdated   CaseResult = "updated"   // notes, a body or a close were added to a known id
	CaseUnchanged CaseResult = "unchanged" // the plane already had everything the report says
	CaseRefused   CaseResult = "refused"   // a rule refused it; Err says which
)

// CaseOutcome is one case's fate.
type CaseOutcome struct {
	ID         int64
	Recipe     string
	Result     CaseResult
	NotesAdded int
	Closed     bool  // this report closed the case
	Superseded int64 // the older open case of the recipe this one closed, or 0
	// Capped says that notes were dropped because the case holds MaxCaseNotesKept already.
	Capped bool
	Err    error // the refusal, for CaseRefused
}

type CaseIntakeResult struct {
	Outcomes []CaseOutcome
	// Changes are the incident events intake wrote, in order.
	Changes []IncidentChange
}

type CaseGetParams struct {
	NodeID string
	ID     int64
}

type CaseListParams struct {
	NodeID string
	Limit  int // 0: 100
}

// recipeNameRE is the manifest's module name rule.
var recipeNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// ValidText reports whether s can be stored as text in both databases: valid UTF-8 without NUL.
func ValidText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return false
		}
	}
	return true
}

// Check refuses a report that breaks the store's contract, with store.param_invalid naming the field.
// Intake's callers run it on each case first, to refuse that case alone.
func (c CaseReport) Check() error {
	switch {
	case c.ID <= 0:
		return invalid("id", "case id must be above 0")
	case !recipeNameRE.MatchString(c.Recipe):
		return invalid("recipe", "recipe %q is not a module name", c.Recipe)
	case c.State != CaseOpen && c.State != CaseClosed:
		return invalid("state", "state %q is not open or closed", c.State)
	case c.OpenedAt.IsZero():
		return invalid("opened_at", "an opened_at time is needed")
	case c.State == CaseOpen && !c.ClosedAt.IsZero():
		return invalid("closed_at", "an open case has no closed_at")
	case c.State == CaseClosed && c.ClosedAt.IsZero():
		return invalid("closed_at", "a closed case needs its closed_at")
	case len(c.Summary) > MaxCaseText || !ValidText(c.Summary):
		return invalid("summary", "summary is at most %d bytes of UTF-8 without NUL", MaxCaseText)
	case len(c.Notes) > MaxCaseNotes:
		return invalid("notes", "%d notes, at most %d", len(c.Notes), MaxCaseNotes)
	case c.Body != nil && (len(c.Body) > MaxCaseBody || !json.Valid(c.Body)):
		return invalid("body", "body is at most %d bytes of JSON", MaxCaseBody)
	}
	if c.OpenedAt.Year() < 2000 || c.OpenedAt.Year() > 9999 || (!c.ClosedAt.IsZero() && (c.ClosedAt.Year() < 2000 || c.ClosedAt.Year() > 9999)) {
		return invalid("opened_at", "case times must fall in the years 2000 to 9999")
	}
	seen := map[int64]bool{}
	for _, n := range c.Notes {
		switch {
		case n.Seq <= 0:
			return invalid("notes", "a note's seq must be above 0")
		case seen[n.Seq]:
			return invalid("notes", "note %d is reported twice", n.Seq)
		case n.At.IsZero() || n.At.Year() < 2000 || n.At.Year() > 9999:
			return invalid("notes", "note %d needs a time in the years 2000 to 9999", n.Seq)
		case len(n.Text) > MaxCaseText || !ValidText(n.Text):
			return invalid("notes", "note text is at most %d bytes of UTF-8 without NUL", MaxCaseText)
		}
		seen[n.Seq] = true
	}
	return nil
}
