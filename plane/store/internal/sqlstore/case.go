package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// maxOpenCasesNode bounds a node's open cases (the channel's limit).
const maxOpenCasesNode = channel.MaxOpenCasesNode

func checkCaseIntake(p *CaseIntakeParams) error {
	if err := checkID("node_id", p.NodeID); err != nil {
		return err
	}
	if len(p.Cases) > MaxCases {
		return invalid("cases", "%d cases, at most %d", len(p.Cases), MaxCases)
	}
	if p.MaxOpen < 0 || p.MaxOpen > math.MaxInt32 {
		return invalid("max_open", "max_open cannot be negative")
	}
	seen := map[int64]bool{}
	for _, c := range p.Cases {
		if err := c.Check(); err != nil {
			return err
		}
		if seen[c.ID] {
			return invalid("cases", "case %d is reported twice", c.ID)
		}
		seen[c.ID] = true
	}
	if err := checkNotify(p.Notify); err != nil {
		return err
	}
	return checkReopen(p.ReopenWithin)
}

func (s *sqlStore) CaseIntake(ctx context.Context, p CaseIntakeParams) (CaseIntakeResult, error) {
	if err := checkCaseIntake(&p); err != nil {
		return CaseIntakeResult{}, err
	}
	maxOpen := p.MaxOpen
	if maxOpen == 0 {
		maxOpen = maxOpenCasesNode
	}
	cases := append([]CaseReport(nil), p.Cases...)
	sort.Slice(cases, func(i, j int) bool { return cases[i].ID < cases[j].ID })
	t := now(p.Now)
	// A first look without locks: an agent sends its latest case of every recipe on every claim, closed
	// ones included, and most claims bring nothing new. They must not cost a write.
	var res CaseIntakeResult
	var quiet bool
	if err := s.read(ctx, "take in cases", func(ex sqldb.Execer) error {
		var err error
		res, quiet, err = s.caseIntakeQuiet(ctx, ex, p.NodeID, cases)
		return err
	}); err != nil || quiet {
		return res, err
	}
	in := intake{s: s, ctx: ctx, nodeID: p.NodeID, t: t, maxOpen: maxOpen,
		inc: incidentWriter{s: s, ctx: ctx, t: t, reopenWithin: reopenWithin(p.ReopenWithin), notify: p.Notify}}
	err := s.tx(ctx, "take in cases", func(ex sqldb.Execer) error {
		res = CaseIntakeResult{}
		in.ex, in.inc.ex, in.inc.changes = ex, ex, nil
		// The node's row lock serialises intake per node (a claim retried while the first is still
		// being handled), and keeps the node from ending its pairing meanwhile.
		if err := s.lockActiveNode(ctx, ex, p.NodeID); err != nil {
			return err
		}
		for _, c := range cases {
			out, err := in.one(c)
			if err != nil {
				return err
			}
			res.Outcomes = append(res.Outcomes, out)
		}
		res.Changes = in.inc.changes
		return nil
	})
	if err != nil {
		return CaseIntakeResult{}, err
	}
	return res, nil
}

// caseIntakeQuiet reports whether the plane already holds everything the cases say, so that intake has
// nothing to write; it then returns their outcomes, all unchanged. Anything else (a new id, a close, a new
// note or body, a report a rule refuses) takes the write path, which decides under the node's lock.
func (s *sqlStore) caseIntakeQuiet(ctx context.Context, ex sqldb.Execer, nodeID string, cases []CaseReport) (CaseIntakeResult, bool, error) {
	var state string
	err := ex.QueryRow(ctx, s.q.CaseNodeState, nodeID).Scan(&state)
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return CaseIntakeResult{}, false, errcode.New(errcode.NodeNotFound, "no node %s", nodeID).With(errcode.DetailNodeID, nodeID)
	}
	if err != nil {
		return CaseIntakeResult{}, false, err
	}
	if err := active(Node{ID: nodeID, State: NodeState(state)}); err != nil {
		return CaseIntakeResult{}, false, err
	}
	var res CaseIntakeResult
	for _, c := range cases {
		known, err := scanCase(ex.QueryRow(ctx, s.q.CaseGet, nodeID, c.ID))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return CaseIntakeResult{}, false, nil
		}
		if err != nil {
			return CaseIntakeResult{}, false, err
		}
		if known.Recipe != c.Recipe || known.State != c.State || (c.Body != nil && known.Body == nil) {
			return CaseIntakeResult{}, false, nil
		}
		if len(c.Notes) > 0 {
			held := map[int64]bool{}
			rs, err := ex.Query(ctx, s.q.CaseNodeNoteSeqs, nodeID, c.ID)
			if err != nil {
				return CaseIntakeResult{}, false, err
			}
			for rs.Next() {
				var seq int64
				if err := rs.Scan(&seq); err != nil {
					rs.Close()
					return CaseIntakeResult{}, false, err
				}
				held[seq] = true
			}
			err = rs.Err()
			rs.Close()
			if err != nil {
				return CaseIntakeResult{}, false, err
			}
			for _, n := range c.Notes {
				if !held[n.Seq] {
					return CaseIntakeResult{}, false, nil
				}
			}
		}
		res.Outcomes = append(res.Outcomes, CaseOutcome{ID: c.ID, Recipe: c.Recipe, Result: CaseUnchanged})
	}
	return res, true, nil
}

// intake applies one claim's cases inside its transaction.
type intake struct {
	s       *sqlStore
	ctx     context.Context
	ex      sqldb.Execer
	nodeID  string
	t       time.Time
	maxOpen int
	inc     incidentWriter
}

func caseSource(recipe string) string { return "recipe:" + recipe }

func (in *intake) one(c CaseReport) (CaseOutcome, error) {
	out := CaseOutcome{ID: c.ID, Recipe: c.Recipe}
	known, found, err := in.get(c.ID)
	if err != nil {
		return out, err
	}
	if found {
		return in.known(c, known, out)
	}

	// A new id. It must be the recipe's newest: an older case is not recorded after a newer one.
	var newest int64
	if err := in.ex.QueryRow(in.ctx, in.s.q.CaseNewest, in.nodeID, c.Recipe).Scan(&newest); err != nil {
		return out, err
	}
	if c.ID < newest {
		out.Result = CaseRefused
		out.Err = errcode.New(errcode.CaseSuperseded,
			"case %d of recipe %s is below case %d the plane holds for it; an older case is not recorded", c.ID, c.Recipe, newest).
			With(errcode.DetailCase, c.ID).With(errcode.DetailNewest, newest)
		return out, nil
	}
	older, hasOlder, err := in.openFor(c.Recipe)
	if err != nil {
		return out, err
	}
	switch {
	case hasOlder:
		// A higher id while an older case is open: the node closed the older case and opened this
		// one, but the plane never heard the close. Close it here and say so on the case.
		if err := in.closeCase(older.ID, in.t, AuthorPlane); err != nil {
			return out, err
		}
		if err := in.planeNote(older.ID, fmt.Sprintf("closed by the plane: the node reported case %d for the same recipe, so this case's close went unheard", c.ID)); err != nil {
			return out, err
		}
		out.Superseded = older.ID
	case c.State == CaseOpen:
		var open int64
		if err := in.ex.QueryRow(in.ctx, in.s.q.CaseOpenCount, in.nodeID).Scan(&open); err != nil {
			return out, err
		}
		if open >= int64(in.maxOpen) {
			out.Result = CaseRefused
			out.Err = errcode.New(errcode.CaseTooManyOpen,
				"node has %d open cases, the most the plane keeps; case %d of recipe %s was not recorded", open, c.ID, c.Recipe).
				With(errcode.DetailCase, c.ID).With(errcode.DetailMax, in.maxOpen)
			return out, nil
		}
	}
	closedBy := ""
	if c.State == CaseClosed {
		closedBy = AuthorNode
	}
	if _, err := in.ex.Exec(in.ctx, in.s.q.CaseInsert, in.nodeID, c.ID, c.Recipe, string(c.State), c.OpenedAt.UTC(),
		at(c.ClosedAt), closedBy, c.Summary, jsonText(c.Body), in.t); err != nil {
		return out, err
	}
	out.Result = CaseStored
	if out.NotesAdded, out.Capped, err = in.notes(c.ID, c.Notes); err != nil {
		return out, err
	}

	// The incident: the recipe's condition is open while its case is. A case first heard of already
	// closed happened while the plane was not listening: it is recorded, opened and cleared at once,
	// and sends nothing.
	source := caseSource(c.Recipe)
	if out.Superseded != 0 {
		if err := in.inc.caseMoved(in.nodeID, source, out.Superseded, c.ID, c.Summary); err != nil {
			return out, err
		}
	}
	if err := in.inc.raise(raise{nodeID: in.nodeID, source: source, severity: SeverityWarning, summary: c.Summary,
		caseID: c.ID, actor: AuthorNode, text: caseText("case %d opened", c.ID, c.Summary), quiet: c.State == CaseClosed}); err != nil {
		return out, err
	}
	if c.State == CaseClosed {
		out.Closed = true
		return out, in.inc.clearSource(in.nodeID, source, AuthorNode, caseText("case %d closed: the node's check passes", c.ID, ""))
	}
	return out, nil
}

// known applies a report of a case the plane holds.
func (in *intake) known(c CaseReport, known Case, out CaseOutcome) (CaseOutcome, error) {
	if known.Recipe != c.Recipe {
		out.Result = CaseRefused
		out.Err = errcode.New(errcode.CaseInvalid, "case %d is recipe %s on the plane, not %s", c.ID, known.Recipe, c.Recipe).
			With(errcode.DetailField, "recipe").With(errcode.DetailCase, c.ID)
		return out, nil
	}
	if known.State == CaseClosed && c.State == CaseOpen {
		out.Result = CaseRefused
		out.Err = errcode.New(errcode.CaseClosed, "case %d of recipe %s is closed on the plane (by the %s) and is never reopened",
			c.ID, c.Recipe, known.ClosedBy).With(errcode.DetailCase, c.ID)
		return out, nil
	}
	var err error
	if out.NotesAdded, out.Capped, err = in.notes(c.ID, c.Notes); err != nil {
		return out, err
	}
	changed := out.NotesAdded > 0
	if c.Body != nil {
		n, err := in.ex.Exec(in.ctx, in.s.q.CaseSetBody, in.nodeID, c.ID, string(c.Body), in.t)
		if err != nil {
			return out, err
		}
		changed = changed || n > 0
	}
	if known.State == CaseOpen && c.State == CaseClosed {
		if err := in.closeCase(c.ID, c.ClosedAt, AuthorNode); err != nil {
			return out, err
		}
		out.Closed, changed = true, true
		if err := in.inc.clearSource(in.nodeID, caseSource(c.Recipe), AuthorNode,
			caseText("case %d closed: the node's check passes", c.ID, "")); err != nil {
			return out, err
		}
	}
	out.Result = CaseUnchanged
	if changed {
		out.Result = CaseUpdated
		if _, err := in.ex.Exec(in.ctx, in.s.q.CaseTouch, in.nodeID, c.ID, in.t); err != nil {
			return out, err
		}
	}
	return out, nil
}

func caseText(format string, id int64, summary string) string {
	s := fmt.Sprintf(format, id)
	if summary != "" {
		s += ": " + summary
	}
	return s
}

func (in *intake) get(id int64) (Case, bool, error) {
	c, err := scanCase(in.ex.QueryRow(in.ctx, in.s.q.CaseGet, in.nodeID, id))
	if in.s.drv.Kind(err) == sqldb.ErrNoRows {
		return Case{}, false, nil
	}
	return c, err == nil, err
}

func (in *intake) openFor(recipe string) (Case, bool, error) {
	c, err := scanCase(in.ex.QueryRow(in.ctx, in.s.q.CaseOpenForRecipe, in.nodeID, recipe))
	if in.s.drv.Kind(err) == sqldb.ErrNoRows {
		return Case{}, false, nil
	}
	return c, err == nil, err
}

func (in *intake) closeCase(id int64, closedAt time.Time, by string) error {
	_, err := in.ex.Exec(in.ctx, in.s.q.CaseClose, in.nodeID, id, closedAt.UTC(), by, in.t)
	return err
}

// notes appends the node's notes the plane does not have yet, up to MaxCaseNotesKept per case. It
// reports how many were added and whether some were dropped at the cap.
func (in *intake) notes(id int64, notes []CaseNote) (int, bool, error) {
	if len(notes) == 0 {
		return 0, false, nil
	}
	var count, planeSeq int64
	if err := in.ex.QueryRow(in.ctx, in.s.q.CaseNoteCount, in.nodeID, id).Scan(&count, &planeSeq); err != nil {
		return 0, false, err
	}
	sorted := append([]CaseNote(nil), notes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	added, capped := 0, false
	for _, n := range sorted {
		if count >= MaxCaseNotesKept {
			capped = true
			break
		}
		k, err := in.ex.Exec(in.ctx, in.s.q.CaseNoteInsert, in.nodeID, id, AuthorNode, n.Seq, n.At.UTC(), n.Text, in.t)
		if err != nil {
			return added, capped, err
		}
		added += int(k)
		count += k
	}
	return added, capped, nil
}

// planeNote writes the plane's own note on a case.
func (in *intake) planeNote(id int64, text string) error {
	var count, planeSeq int64
	if err := in.ex.QueryRow(in.ctx, in.s.q.CaseNoteCount, in.nodeID, id).Scan(&count, &planeSeq); err != nil {
		return err
	}
	_, err := in.ex.Exec(in.ctx, in.s.q.CaseNoteInsert, in.nodeID, id, AuthorPlane, planeSeq+1, in.t, text, in.t)
	return err
}

func checkCaseKey(nodeID string, id int64) error {
	if err := checkID("node_id", nodeID); err != nil {
		return err
	}
	if id <= 0 {
		return invalid("id", "case id must be above 0")
	}
	return nil
}

func (s *sqlStore) CaseGet(ctx context.Context, p CaseGetParams) (Case, error) {
	if err := checkCaseKey(p.NodeID, p.ID); err != nil {
		return Case{}, err
	}
	var c Case
	err := s.read(ctx, "get case", func(ex sqldb.Execer) error {
		var err error
		c, err = scanCase(ex.QueryRow(ctx, s.q.CaseGet, p.NodeID, p.ID))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.CaseNotFound, "node %s has no case %d", p.NodeID, p.ID).With(errcode.DetailNodeID, p.NodeID).With(errcode.DetailCase, p.ID)
		}
		if err != nil {
			return err
		}
		rs, err := ex.Query(ctx, s.q.CaseNotes, p.NodeID, p.ID)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var n CaseNote
			if err := rs.Scan(&n.Author, &n.Seq, stamp{&n.At}, &n.Text, stamp{&n.ReceivedAt}); err != nil {
				return err
			}
			c.Notes = append(c.Notes, n)
		}
		return rs.Err()
	})
	return c, err
}

func (s *sqlStore) CaseList(ctx context.Context, p CaseListParams) ([]Case, error) {
	if err := checkID("node_id", p.NodeID); err != nil {
		return nil, err
	}
	limit, err := listLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	var out []Case
	err = s.read(ctx, "list cases", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.CaseList, p.NodeID, int64(limit))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			c, err := scanCase(rs)
			if err != nil {
				return err
			}
			c.Body = nil
			out = append(out, c)
		}
		return rs.Err()
	})
	return out, err
}

func scanCase(r sqldb.Row) (Case, error) {
	var c Case
	var state string
	var body []byte
	if err := r.Scan(&c.NodeID, &c.ID, &c.Recipe, &state, stamp{&c.OpenedAt}, stamp{&c.ClosedAt}, &c.ClosedBy,
		&c.Summary, &body, stamp{&c.ReceivedAt}, stamp{&c.UpdatedAt}); err != nil {
		return Case{}, err
	}
	c.State = CaseState(state)
	if body != nil {
		c.Body = json.RawMessage(body)
	}
	return c, nil
}

// lockActiveNode takes the node's row lock (PostgreSQL; SQLite's write transaction already excludes
// every other writer) and refuses a node that is not active.
func (s *sqlStore) lockActiveNode(ctx context.Context, ex sqldb.Execer, nodeID string) error {
	var state string
	err := ex.QueryRow(ctx, s.q.NodeLock, nodeID).Scan(&state)
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return errcode.New(errcode.NodeNotFound, "no node %s", nodeID).With(errcode.DetailNodeID, nodeID)
	}
	if err != nil {
		return err
	}
	return active(Node{ID: nodeID, State: NodeState(state)})
}
