package server

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

func (s *Server) machineRoutes(r chi.Router) {
	s.handle(r, api.MachinesList, func(r *http.Request) (any, error) {
		return s.cfg.Machines.List(r.Context(), tokenFrom(r.Context()))
	})
	s.handle(r, api.MachinesAdd, func(r *http.Request) (any, error) {
		var req api.MachineRequest
		if err := readJSON(r, 16<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Machines.Add(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.MachinesEdit, func(r *http.Request) (any, error) {
		var req api.MachineRequest
		if err := readJSON(r, 16<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Machines.Edit(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
	for _, rc := range []struct {
		rt   api.Route
		call func(context.Context, api.Token, string) (api.Machine, error)
	}{{api.MachinesConfirm, s.cfg.Machines.Confirm}, {api.MachinesRemove, s.cfg.Machines.Remove}} {
		s.handle(r, rc.rt, func(r *http.Request) (any, error) {
			return rc.call(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
		})
	}
}
