package server

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// cutMark ends a text the plane shortened to its cap.
const cutMark = " …[cut]"

// capText makes node text storable and bounded: invalid UTF-8 and NUL become U+FFFD (neither database
// keeps NUL in text), and text over max bytes is cut at a character boundary and marked. Nothing else
// is changed: the text is shown as text, never interpreted, wherever it is shown.
func capText(s string, max int) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= max {
		return s, false
	}
	s = strings.ToValidUTF8(s[:max-len(cutMark)], "")
	return s + cutMark, true
}

// capped names the fields intake cut, each once, for the log.
type capped []string

func (c *capped) add(field string) {
	if !slices.Contains(*c, field) {
		*c = append(*c, field)
	}
}

func (c *capped) text(field, s string, max int) string {
	out, cut := capText(s, max)
	if cut {
		c.add(field)
	}
	return out
}

// caseFromWire re-validates one case a node reported and caps every field. It returns the fields it
// cut, or a case.invalid error naming the field that cannot be taken at all.
func caseFromWire(r channel.CaseReport) (store.CaseReport, capped, error) {
	var cut capped
	if r.ID == 0 || r.ID > math.MaxInt64 {
		return store.CaseReport{}, nil, errcode.New(errcode.CaseInvalid, "case id %d is outside 1..2^63-1", r.ID).With(errcode.DetailField, "id")
	}
	c := store.CaseReport{
		ID: int64(r.ID), Recipe: r.Recipe, State: store.CaseState(r.State), OpenedAt: r.OpenedAt, ClosedAt: r.ClosedAt,
		Summary: cut.text("summary", r.Summary, store.MaxCaseText),
	}
	notes := r.Notes
	if len(notes) > store.MaxCaseNotes {
		// Keep the newest: the older ones rode earlier claims.
		notes = append([]channel.CaseNote(nil), notes...)
		sort.SliceStable(notes, func(i, j int) bool { return notes[i].Seq < notes[j].Seq })
		notes = notes[len(notes)-store.MaxCaseNotes:]
		cut.add("notes")
	}
	for _, n := range notes {
		c.Notes = append(c.Notes, store.CaseNote{Seq: int64(n.Seq), At: n.At, Text: cut.text("notes.text", n.Text, store.MaxCaseText)})
	}
	if r.Body != nil {
		body, err := json.Marshal(r.Body)
		switch {
		case err != nil, len(body) > store.MaxCaseBody:
			cut.add("body")
		default:
			c.Body = validUTF8(body) // attempts and host report are the node's raw JSON

		}
	}
	if err := c.Check(); err != nil {
		field, _ := errcode.From(err, errcode.CaseInvalid).Details["field"].(string)
		return store.CaseReport{}, nil, errcode.Wrap(err, errcode.CaseInvalid, "case %d does not follow the wire contract", r.ID).
			With(errcode.DetailField, field)
	}
	return c, cut, nil
}

// capRecipes bounds the recipe list a claim reports and cleans its text, so that the node's report is
// always storable (PostgreSQL's jsonb refuses NUL in text).
func capRecipes(in []channel.RecipeReport) ([]channel.RecipeReport, capped) {
	var cut capped
	if len(in) > channel.MaxRecipes {
		in = in[:channel.MaxRecipes]
		cut.add("recipes")
	}
	out := make([]channel.RecipeReport, len(in))
	for i, r := range in {
		out[i] = channel.RecipeReport{
			Name: cut.text("recipes.name", r.Name, 255), Version: cut.text("recipes.version", r.Version, 255),
			Digest: cut.text("recipes.digest", r.Digest, 255), State: cut.text("recipes.state", r.State, 64),
			LastVerdict: cut.text("recipes.last_verdict", r.LastVerdict, 64), LastCheckAt: r.LastCheckAt,
			Detail: cut.text("recipes.detail", r.Detail, channel.MaxCaseText),
		}
	}
	return out, cut
}

// intakeCases records the cases a claim carried. A case the plane refuses is logged with its code and
// never fails the claim: the node's report stands, and the rest of its cases are recorded. Only a store
// that cannot be reached fails the claim, so that the node sends its cases again.
func (s *Server) intakeCases(ctx context.Context, node store.Node, reports []channel.CaseReport) error {
	if len(reports) == 0 {
		return nil
	}
	log := s.log.With("node", node.ID, "name", node.Name)
	if len(reports) > channel.MaxCases {
		log.Warn("case refused", "code", errcode.CaseTooMany, "count", len(reports), "max", channel.MaxCases,
			"err", "the claim carried more cases than the wire allows; the rest were not read")
		reports = reports[:channel.MaxCases]
	}
	var cases []store.CaseReport
	seen := map[int64]bool{}
	for _, r := range reports {
		c, cut, err := caseFromWire(r)
		if err == nil && seen[c.ID] {
			err = errcode.New(errcode.CaseInvalid, "case %d is reported twice in one claim", c.ID).With(errcode.DetailField, "id")
		}
		if err != nil {
			field, _ := errcode.From(err, errcode.CaseInvalid).Details["field"].(string)
			log.Warn("case refused", "code", errcode.Code(err), "case", r.ID, "field", field, "err", err.Error())
			continue
		}
		seen[c.ID] = true
		if len(cut) > 0 {
			log.Warn("case capped", "code", errcode.CaseCapped, "case", c.ID, "recipe", c.Recipe, "fields", []string(cut))
		}
		cases = append(cases, c)
	}
	if len(cases) == 0 {
		return nil
	}
	res, err := s.store.CaseIntake(ctx, store.CaseIntakeParams{
		NodeID: node.ID, Cases: cases, Now: s.now(), MaxOpen: s.cfg.MaxOpenCases, Notify: s.cfg.WebhookNames,
	})
	if err != nil {
		if errcode.Has(err, errcode.StoreUnavailable) || errcode.Has(err, errcode.StoreBusy) {
			return err
		}
		log.Error("cases not recorded", "code", errcode.Code(err), "err", err.Error())
		return nil
	}
	for _, o := range res.Outcomes {
		switch o.Result {
		case store.CaseRefused:
			log.Warn("case refused", "code", errcode.Code(o.Err), "case", o.ID, "recipe", o.Recipe, "err", o.Err.Error())
		case store.CaseStored, store.CaseUpdated:
			log.Info("case recorded", "case", o.ID, "recipe", o.Recipe, "result", o.Result, "notes", o.NotesAdded,
				"closed", o.Closed, "superseded", o.Superseded)
		}
		if o.Capped {
			log.Warn("case capped", "code", errcode.CaseCapped, "case", o.ID, "recipe", o.Recipe, "fields", []string{"notes"},
				"err", "the case holds as many notes as the plane keeps")
		}
	}
	s.incidentsChanged(res.Changes)
	return nil
}
