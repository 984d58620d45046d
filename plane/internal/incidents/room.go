package incidents

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what the incidents room reads and writes for people: the incidents, their timelines, the
// cases behind them and the notifications they sent.
type Store interface {
	IncidentList(ctx context.Context, p store.IncidentListParams) (store.IncidentListResult, error)
	IncidentGet(ctx context.Context, p store.IncidentGetParams) (store.Incident, error)
	IncidentEventList(ctx context.Context, p store.IncidentEventListParams) ([]store.IncidentEvent, error)
	IncidentTriage(ctx context.Context, p store.IncidentTriageParams) (store.IncidentChange, error)
	IncidentNote(ctx context.Context, p store.IncidentNoteParams) (store.IncidentEvent, error)
	CaseGet(ctx context.Context, p store.CaseGetParams) (store.Case, error)
	NotificationList(ctx context.Context, p store.NotificationListParams) ([]store.Notification, error)
}

// RoomConfig sets up the room.
type RoomConfig struct {
	Store Store
	// Nodes finds the node a list is narrowed to, by id or name.
	Nodes *nodes.Room
	Log   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Room is the incidents' Go API, which the HTTP server and the web UI both call.
type Room struct {
	c   RoomConfig
	log *slog.Logger
}

// NewRoom makes the room.
func NewRoom(c RoomConfig) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Room{c: c, log: services.Logger(c.Log)}
}

// List lists incidents newest first, narrowed by the query (needs_you, a node by id or name, a
// condition).
func (r *Room) List(ctx context.Context, who api.Token, q api.IncidentsListQuery) (api.IncidentList, error) {
	p := store.IncidentListParams{NeedsYou: q.NeedsYou, Condition: store.Condition(q.Condition), Limit: q.Limit, Cursor: q.Cursor, Now: r.c.Now()}
	if q.Node != "" {
		n, err := r.c.Nodes.Get(ctx, q.Node)
		if err != nil {
			return api.IncidentList{}, err
		}
		p.NodeID = n.ID
	}
	res, err := r.c.Store.IncidentList(ctx, p)
	return api.IncidentList{Incidents: apiconv.Each(res.Incidents, apiconv.Incident), NextCursor: res.NextCursor}, err
}

// Show answers an incident with its timeline, the case behind it (notes and body), and the
// notifications it sent with their attempts.
func (r *Room) Show(ctx context.Context, who api.Token, id string) (api.IncidentDetail, error) {
	inc, err := r.c.Store.IncidentGet(ctx, store.IncidentGetParams{ID: id, Now: r.c.Now()})
	if err != nil {
		return api.IncidentDetail{}, err
	}
	d := api.IncidentDetail{Incident: apiconv.Incident(inc)}
	events, err := r.c.Store.IncidentEventList(ctx, store.IncidentEventListParams{ID: id})
	if err != nil {
		return api.IncidentDetail{}, err
	}
	d.Events = apiconv.Each(events, apiconv.Event)
	if inc.CaseID != 0 {
		c, err := r.c.Store.CaseGet(ctx, store.CaseGetParams{NodeID: inc.NodeID, ID: inc.CaseID})
		if err != nil {
			return api.IncidentDetail{}, err
		}
		ac := apiconv.Case(c)
		d.Case = &ac
	}
	notes, err := r.c.Store.NotificationList(ctx, store.NotificationListParams{IncidentID: id})
	if err != nil {
		return api.IncidentDetail{}, err
	}
	d.Notifications = apiconv.Each(notes, apiconv.Notification)
	return d, nil
}

// Triage records a person's answer: new, resolved or ignored, or snoozed for one of the four lengths
// (api.SnoozeLengths), so a snooze means the same to everyone reading the timeline. Repeating the
// triage in force writes nothing.
func (r *Room) Triage(ctx context.Context, who api.Token, id string, req api.TriageRequest) (api.IncidentChange, error) {
	now := r.c.Now()
	p := store.IncidentTriageParams{ID: id, By: who.Name, Reason: req.Reason, Now: now}
	switch t := store.Triage(strings.TrimSpace(req.Triage)); t {
	case store.TriageNew, store.TriageResolved, store.TriageIgnored:
		if req.For != "" {
			return api.IncidentChange{}, errcode.New(errcode.RequestMalformed, "only a snooze takes a length").With(errcode.DetailField, "for")
		}
		p.Triage = t
	case store.TriageSnoozed, "snooze":
		d, ok := api.Snooze(req.For)
		if !ok {
			return api.IncidentChange{}, errcode.New(errcode.RequestMalformed, "snooze for %s, not %q", api.SnoozeLengths, req.For).With(errcode.DetailField, "for")
		}
		p.Triage, p.SnoozedUntil = store.TriageSnoozed, now.Add(d)
	default:
		return api.IncidentChange{}, errcode.New(errcode.RequestMalformed, "triage is new, snoozed, resolved or ignored, not %q", req.Triage).
			With(errcode.DetailField, "triage")
	}
	ch, err := r.c.Store.IncidentTriage(ctx, p)
	if err != nil {
		return api.IncidentChange{}, err
	}
	if ch.Event.Seq != 0 {
		r.log.Info("incident triaged", "incident", ch.Incident.ID, "node", ch.Incident.NodeID, "source", ch.Incident.Source,
			"triage", ch.Incident.Triage, "snoozed_until", ch.Incident.SnoozedUntil, "by", p.By)
	}
	return apiconv.Change(ch), nil
}

// Note adds a person's note to an incident's timeline.
func (r *Room) Note(ctx context.Context, who api.Token, id string, req api.NoteRequest) (api.IncidentEvent, error) {
	if strings.TrimSpace(req.Text) == "" {
		return api.IncidentEvent{}, errcode.New(errcode.RequestMalformed, "a note needs text").With(errcode.DetailField, "text")
	}
	ev, err := r.c.Store.IncidentNote(ctx, store.IncidentNoteParams{ID: id, By: who.Name, Text: req.Text, Now: r.c.Now()})
	if err != nil {
		return api.IncidentEvent{}, err
	}
	return apiconv.Event(ev), nil
}
