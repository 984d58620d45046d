package server

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func (s *Server) incidentRoutes(r chi.Router) {
	s.handle(r, api.IncidentsList, s.incidentList)
	s.handle(r, api.IncidentsShow, s.incidentShow)
	s.handle(r, api.IncidentsTriage, s.incidentTriage)
	s.handle(r, api.IncidentsNote, s.incidentNote)
}

func (s *Server) incidentList(r *http.Request) (any, error) {
	q, err := api.ParseIncidentsListQuery(r.URL.Query())
	if err != nil {
		return nil, err
	}
	p := store.IncidentListParams{NeedsYou: q.NeedsYou, Condition: store.Condition(q.Condition), Limit: q.Limit, Cursor: q.Cursor, Now: s.now()}
	if q.Node != "" {
		n, err := s.cfg.Nodes.Get(r.Context(), q.Node)
		if err != nil {
			return nil, err
		}
		p.NodeID = n.ID
	}
	res, err := s.store.IncidentList(r.Context(), p)
	return api.IncidentList{Incidents: apiconv.Each(res.Incidents, apiconv.Incident), NextCursor: res.NextCursor}, err
}

func (s *Server) incidentShow(r *http.Request) (any, error) {
	ctx := r.Context()
	id := chi.URLParam(r, "id")
	inc, err := s.store.IncidentGet(ctx, store.IncidentGetParams{ID: id, Now: s.now()})
	if err != nil {
		return nil, err
	}
	d := api.IncidentDetail{Incident: apiconv.Incident(inc)}
	events, err := s.store.IncidentEventList(ctx, store.IncidentEventListParams{ID: id})
	if err != nil {
		return nil, err
	}
	d.Events = apiconv.Each(events, apiconv.Event)
	if inc.CaseID != 0 {
		c, err := s.store.CaseGet(ctx, store.CaseGetParams{NodeID: inc.NodeID, ID: inc.CaseID})
		if err != nil {
			return nil, err
		}
		ac := apiconv.Case(c)
		d.Case = &ac
	}
	notes, err := s.store.NotificationList(ctx, store.NotificationListParams{IncidentID: id})
	if err != nil {
		return nil, err
	}
	d.Notifications = apiconv.Each(notes, apiconv.Notification)
	return d, nil
}

func (s *Server) incidentTriage(r *http.Request) (any, error) {
	var req api.TriageRequest
	if err := readJSON(r, 8<<10, &req); err != nil {
		return nil, err
	}
	now := s.now()
	p := store.IncidentTriageParams{ID: chi.URLParam(r, "id"), By: tokenFrom(r.Context()).Name, Reason: req.Reason, Now: now}
	switch t := store.Triage(strings.TrimSpace(req.Triage)); t {
	case store.TriageNew, store.TriageResolved, store.TriageIgnored:
		if req.For != "" {
			return nil, errcode.New(errcode.RequestMalformed, "only a snooze takes a length").With(errcode.DetailField, "for")
		}
		p.Triage = t
	case store.TriageSnoozed, "snooze":
		d, ok := api.Snooze(req.For)
		if !ok {
			return nil, errcode.New(errcode.RequestMalformed, "snooze for %s, not %q", api.SnoozeLengths, req.For).With(errcode.DetailField, "for")
		}
		p.Triage, p.SnoozedUntil = store.TriageSnoozed, now.Add(d)
	default:
		return nil, errcode.New(errcode.RequestMalformed, "triage is new, snoozed, resolved or ignored, not %q", req.Triage).
			With(errcode.DetailField, "triage")
	}
	ch, err := s.store.IncidentTriage(r.Context(), p)
	if err != nil {
		return nil, err
	}
	if ch.Event.Seq != 0 {
		s.log.Info("incident triaged", "incident", ch.Incident.ID, "node", ch.Incident.NodeID, "source", ch.Incident.Source,
			"triage", ch.Incident.Triage, "snoozed_until", ch.Incident.SnoozedUntil, "by", p.By)
	}
	return apiconv.Change(ch), nil
}

func (s *Server) incidentNote(r *http.Request) (any, error) {
	var req api.NoteRequest
	if err := readJSON(r, 8<<10, &req); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, errcode.New(errcode.RequestMalformed, "a note needs text").With(errcode.DetailField, "text")
	}
	ev, err := s.store.IncidentNote(r.Context(), store.IncidentNoteParams{ID: chi.URLParam(r, "id"), By: tokenFrom(r.Context()).Name,
		Text: req.Text, Now: s.now()})
	if err != nil {
		return nil, err
	}
	return apiconv.Event(ev), nil
}
