package server

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

func (s *Server) scheduleRoutes(r chi.Router) {
	s.handle(r, api.SchedulesCreate, func(r *http.Request) (any, error) {
		var req api.ScheduleRequest
		if err := readJSON(r, 128<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Schedules.Create(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.SchedulesList, func(r *http.Request) (any, error) {
		return s.cfg.Schedules.List(r.Context(), tokenFrom(r.Context()))
	})
	s.handle(r, api.SchedulesEdit, func(r *http.Request) (any, error) {
		var req api.ScheduleEdit
		if err := readJSON(r, 128<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Schedules.Edit(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
	for _, rc := range []struct {
		rt   api.Route
		call func(context.Context, api.Token, string) (api.Schedule, error)
	}{
		{api.SchedulesShow, s.cfg.Schedules.Show},
		{api.SchedulesPause, s.cfg.Schedules.Pause},
		{api.SchedulesResume, s.cfg.Schedules.Resume},
		{api.SchedulesDelete, s.cfg.Schedules.Delete},
	} {
		s.handle(r, rc.rt, func(r *http.Request) (any, error) {
			return rc.call(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
		})
	}
}
