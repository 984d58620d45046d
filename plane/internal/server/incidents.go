package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/internal/incidents"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Snoozes are the lengths an operator snoozes an incident for: a few, so that a snooze means the same to
// everyone reading the timeline.
var Snoozes = map[string]time.Duration{"4h": 4 * time.Hour, "1d": 24 * time.Hour, "3d": 72 * time.Hour, "1w": 7 * 24 * time.Hour}

// IncidentDetail is an incident with its timeline, the case it follows, and its notifications.
type IncidentDetail struct {
	Incident      store.Incident        `json:"incident"`
	Events        []store.IncidentEvent `json:"events"`
	Case          *store.Case           `json:"case,omitempty"`
	Notifications []store.Notification  `json:"notifications"`
}

// TriageRequest is a person's answer to "what is being done": new, resolved, ignored, or snoozed for
// one of Snoozes.
type TriageRequest struct {
	Triage string `json:"triage"`
	For    string `json:"for,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// NoteRequest adds a note to an incident's timeline.
type NoteRequest struct {
	Text string `json:"text"`
}

func (s *Server) incidentRoutes(r chi.Router) {
	r.Get("/incidents", s.with(store.RoleViewer, s.incidentList))
	r.Get("/incidents/{id}", s.with(store.RoleViewer, s.incidentShow))
	r.Post("/incidents/{id}/triage", s.with(store.RoleOperator, s.incidentTriage))
	r.Post("/incidents/{id}/notes", s.with(store.RoleOperator, s.incidentNote))
}

func (s *Server) incidentList(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	p := store.IncidentListParams{Condition: store.Condition(q.Get("condition")), Limit: limitParam(r), Cursor: q.Get("cursor"), Now: s.now()}
	switch q.Get("needs_you") {
	case "", "false", "0":
	case "true", "1":
		p.NeedsYou = true
	default:
		return 0, nil, errcode.New(errcode.RequestMalformed, "needs_you is true or false").With("field", "needs_you")
	}
	if ref := q.Get("node"); ref != "" {
		n, err := s.nodeByRef(r.Context(), ref)
		if err != nil {
			return 0, nil, err
		}
		p.NodeID = n.ID
	}
	res, err := s.store.IncidentList(r.Context(), p)
	res.Incidents = nonNil(res.Incidents)
	return http.StatusOK, res, err
}

func (s *Server) incidentShow(r *http.Request) (int, any, error) {
	ctx := r.Context()
	id := chi.URLParam(r, "id")
	inc, err := s.store.IncidentGet(ctx, store.IncidentGetParams{ID: id, Now: s.now()})
	if err != nil {
		return 0, nil, err
	}
	d := IncidentDetail{Incident: inc}
	if d.Events, err = s.store.IncidentEventList(ctx, store.IncidentEventListParams{ID: id}); err != nil {
		return 0, nil, err
	}
	if inc.CaseID != 0 {
		c, err := s.store.CaseGet(ctx, store.CaseGetParams{NodeID: inc.NodeID, ID: inc.CaseID})
		if err != nil {
			return 0, nil, err
		}
		d.Case = &c
	}
	if d.Notifications, err = s.store.NotificationList(ctx, store.NotificationListParams{IncidentID: id}); err != nil {
		return 0, nil, err
	}
	d.Events, d.Notifications = nonNil(d.Events), nonNil(d.Notifications)
	return http.StatusOK, d, nil
}

func (s *Server) incidentTriage(r *http.Request) (int, any, error) {
	body, err := readBody(r, 8<<10)
	if err != nil {
		return 0, nil, err
	}
	var req TriageRequest
	if err := decodeStrict(body, &req); err != nil {
		return 0, nil, err
	}
	now := s.now()
	p := store.IncidentTriageParams{ID: chi.URLParam(r, "id"), By: tokenFrom(r.Context()).Name, Reason: req.Reason, Now: now}
	switch t := store.Triage(strings.TrimSpace(req.Triage)); t {
	case store.TriageNew, store.TriageResolved, store.TriageIgnored:
		if req.For != "" {
			return 0, nil, errcode.New(errcode.RequestMalformed, "only a snooze takes a length").With("field", "for")
		}
		p.Triage = t
	case store.TriageSnoozed, "snooze":
		d, ok := Snoozes[req.For]
		if !ok {
			return 0, nil, errcode.New(errcode.RequestMalformed, "snooze for 4h, 1d, 3d or 1w, not %q", req.For).With("field", "for")
		}
		p.Triage, p.SnoozedUntil = store.TriageSnoozed, now.Add(d)
	default:
		return 0, nil, errcode.New(errcode.RequestMalformed, "triage is new, snoozed, resolved or ignored, not %q", req.Triage).
			With("field", "triage")
	}
	ch, err := s.store.IncidentTriage(r.Context(), p)
	if err != nil {
		return 0, nil, err
	}
	if ch.Event.Seq != 0 {
		s.log.Info("incident triaged", "incident", ch.Incident.ID, "node", ch.Incident.NodeID, "source", ch.Incident.Source,
			"triage", ch.Incident.Triage, "snoozed_until", ch.Incident.SnoozedUntil, "by", p.By)
	}
	return http.StatusOK, ch, nil
}

func (s *Server) incidentNote(r *http.Request) (int, any, error) {
	body, err := readBody(r, 8<<10)
	if err != nil {
		return 0, nil, err
	}
	var req NoteRequest
	if err := decodeStrict(body, &req); err != nil {
		return 0, nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return 0, nil, errcode.New(errcode.RequestMalformed, "a note needs text").With("field", "text")
	}
	ev, err := s.store.IncidentNote(r.Context(), store.IncidentNoteParams{ID: chi.URLParam(r, "id"), By: tokenFrom(r.Context()).Name,
		Text: req.Text, Now: s.now()})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, ev, nil
}

// incidentsChanged logs what changed and wakes this process's deliverer when there is something to send.
func (s *Server) incidentsChanged(changes []store.IncidentChange) {
	if incidents.LogChanges(s.log, changes) && s.cfg.NotificationsQueued != nil {
		s.cfg.NotificationsQueued()
	}
}
