package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

func (s *Server) incidentRoutes(r chi.Router) {
	s.handle(r, api.IncidentsList, func(r *http.Request) (any, error) {
		q, err := api.ParseIncidentsListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Incidents.List(r.Context(), tokenFrom(r.Context()), q)
	})
	s.handle(r, api.IncidentsShow, func(r *http.Request) (any, error) {
		return s.cfg.Incidents.Show(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
	s.handle(r, api.IncidentsTriage, func(r *http.Request) (any, error) {
		var req api.TriageRequest
		if err := readJSON(r, 8<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Incidents.Triage(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
	s.handle(r, api.IncidentsNote, func(r *http.Request) (any, error) {
		var req api.NoteRequest
		if err := readJSON(r, 8<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Incidents.Note(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
}
