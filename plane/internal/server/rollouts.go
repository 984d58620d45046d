package server

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

func (s *Server) rolloutRoutes(r chi.Router) {
	s.handle(r, api.RolloutsStart, func(r *http.Request) (any, error) {
		var req api.RolloutRequest
		if err := readJSON(r, 256<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Rollouts.Start(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.FleetPatch, func(r *http.Request) (any, error) {
		var req api.FleetPatchRequest
		if err := readJSON(r, 4<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Rollouts.Patch(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.RolloutsList, func(r *http.Request) (any, error) {
		q, err := api.ParseRolloutsListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Rollouts.List(r.Context(), tokenFrom(r.Context()), q)
	})
	for _, rc := range []struct {
		rt   api.Route
		call func(context.Context, api.Token, string) (api.Rollout, error)
	}{
		{api.RolloutsShow, s.cfg.Rollouts.Show},
		{api.RolloutsPause, s.cfg.Rollouts.Pause},
		{api.RolloutsResume, s.cfg.Rollouts.Resume},
		{api.RolloutsAbort, s.cfg.Rollouts.Abort},
		{api.RolloutsRevert, s.cfg.Rollouts.Revert},
	} {
		s.handle(r, rc.rt, func(r *http.Request) (any, error) {
			return rc.call(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
		})
	}
}
