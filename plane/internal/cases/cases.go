// Package cases takes in the cases nodes report on their claims: each is checked again against the
// wire's contract and capped, then handed to the store's intake, whose rules open, note, close and
// supersede cases and the recipe incidents they keep open. A case the plane refuses is logged and never
// fails the claim that carried it.
package cases

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"sort"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/incidents"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodetext"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what the cases room writes through.
type Store interface {
	CaseIntake(ctx context.Context, p store.CaseIntakeParams) (store.CaseIntakeResult, error)
}

// Config sets up the room.
type Config struct {
	Store Store
	Log   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxOpen caps a node's open cases; 0 means channel.MaxOpenCasesNode.
	MaxOpen int
	// Webhooks names the webhooks an incident notifies when a case opens or reopens it.
	Webhooks []string
	// Queued, when not nil, is called after intake queued notifications: it wakes this process's
	// delivery service, so a notification need not wait for its tick.
	Queued func()
}

// Room takes in cases.
type Room struct {
	c   Config
	log *slog.Logger
}

// New makes the room.
func New(c Config) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Room{c: c, log: services.Logger(c.Log)}
}

// Intake records the cases a claim of node carried. A case the plane refuses is logged with its code and
// never fails the claim: the node's report stands, and the rest of its cases are recorded. Only a store
// that cannot be reached fails it (store.unavailable, store.busy), so that the node sends its cases
// again.
func (r *Room) Intake(ctx context.Context, nodeID, nodeName string, reports []channel.CaseReport) error {
	if len(reports) == 0 {
		return nil
	}
	log := r.log.With("node", nodeID, "name", nodeName)
	if len(reports) > channel.MaxCases {
		log.Warn("case refused", "code", errcode.CaseTooMany, "count", len(reports), "max", channel.MaxCases,
			"err", "the claim carried more cases than the wire allows; the rest were not read")
		reports = reports[:channel.MaxCases]
	}
	var cases []store.CaseReport
	seen := map[int64]bool{}
	for _, rep := range reports {
		c, cut, err := fromWire(rep)
		if err == nil && seen[c.ID] {
			err = errcode.New(errcode.CaseInvalid, "case %d is reported twice in one claim", c.ID).With(errcode.DetailField, "id")
		}
		if err != nil {
			field, _ := errcode.From(err, errcode.CaseInvalid).Details["field"].(string)
			log.Warn("case refused", "code", errcode.Code(err), "case", rep.ID, "field", field, "err", err.Error())
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
	res, err := r.c.Store.CaseIntake(ctx, store.CaseIntakeParams{
		NodeID: nodeID, Cases: cases, Now: r.c.Now(), MaxOpen: r.c.MaxOpen, Notify: r.c.Webhooks,
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
	if incidents.LogChanges(r.log, res.Changes) && r.c.Queued != nil {
		r.c.Queued()
	}
	return nil
}

// fromWire re-validates one case a node reported and caps every field. It returns the fields it cut,
// or a case.invalid error naming the field that cannot be taken at all.
func fromWire(r channel.CaseReport) (store.CaseReport, nodetext.Capped, error) {
	var cut nodetext.Capped
	if r.ID == 0 || r.ID > math.MaxInt64 {
		return store.CaseReport{}, nil, errcode.New(errcode.CaseInvalid, "case id %d is outside 1..2^63-1", r.ID).With(errcode.DetailField, "id")
	}
	c := store.CaseReport{
		ID: int64(r.ID), Recipe: r.Recipe, State: store.CaseState(r.State), OpenedAt: r.OpenedAt, ClosedAt: r.ClosedAt,
		Summary: cut.Text("summary", r.Summary, store.MaxCaseText),
	}
	notes := r.Notes
	if len(notes) > store.MaxCaseNotes {
		// Keep the newest: the older ones rode earlier claims.
		notes = append([]channel.CaseNote(nil), notes...)
		sort.SliceStable(notes, func(i, j int) bool { return notes[i].Seq < notes[j].Seq })
		notes = notes[len(notes)-store.MaxCaseNotes:]
		cut.Add("notes")
	}
	for _, n := range notes {
		c.Notes = append(c.Notes, store.CaseNote{Seq: int64(n.Seq), At: n.At, Text: cut.Text("notes.text", n.Text, store.MaxCaseText)})
	}
	if r.Body != nil {
		body, err := json.Marshal(r.Body)
		switch {
		case err != nil, len(body) > store.MaxCaseBody:
			cut.Add("body")
		default:
			c.Body = nodetext.JSON(body) // attempts and host report are the node's raw JSON
		}
	}
	if err := c.Check(); err != nil {
		field, _ := errcode.From(err, errcode.CaseInvalid).Details["field"].(string)
		return store.CaseReport{}, nil, errcode.Wrap(err, errcode.CaseInvalid, "case %d does not follow the wire contract", r.ID).
			With(errcode.DetailField, field)
	}
	return c, cut, nil
}
