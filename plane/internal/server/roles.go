package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/roles"
)

// roleFileCap bounds a role file's request: the file itself, JSON-escaped (a content of control bytes
// grows up to six times; base64 does not grow at all), with room for the envelope.
const roleFileCap = 2*roles.MaxFileBytes + 64<<10

func (s *Server) roleRoutes(r chi.Router) {
	s.handle(r, api.RolesList, func(r *http.Request) (any, error) {
		return s.cfg.Roles.List(r.Context(), tokenFrom(r.Context()))
	})
	s.handle(r, api.RolesCreate, func(r *http.Request) (any, error) {
		var req api.RoleFile
		if err := readJSON(r, roleFileCap, &req); err != nil {
			return nil, err
		}
		return s.cfg.Roles.Create(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.RolesShow, func(r *http.Request) (any, error) {
		q, err := api.ParseRoleShowQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Roles.Show(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "name"), q)
	})
	s.handle(r, api.RolesEdit, func(r *http.Request) (any, error) {
		var req api.RoleFile
		if err := readJSON(r, roleFileCap, &req); err != nil {
			return nil, err
		}
		return s.cfg.Roles.Edit(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "name"), req)
	})
	s.handle(r, api.RolesHistory, func(r *http.Request) (any, error) {
		return s.cfg.Roles.History(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "name"))
	})
	s.handle(r, api.RolesAssign, func(r *http.Request) (any, error) {
		var req api.RoleAssignRequest
		if err := readJSON(r, 8<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Roles.Assign(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "name"), req)
	})
	s.handle(r, api.RolesUnassign, func(r *http.Request) (any, error) {
		var req api.RoleAssignRequest
		if err := readJSON(r, 8<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Roles.Unassign(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "name"), req)
	})
	s.handle(r, api.RolesPlan, func(r *http.Request) (any, error) {
		var req api.RolesPlanRequest
		if err := readOptional(r, 8<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Roles.Plan(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "name"), req)
	})
	s.handle(r, api.RolesApply, func(r *http.Request) (any, error) {
		var req api.RolesApplyRequest
		if err := readOptional(r, 64<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Roles.Apply(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "name"), req)
	})
	s.handle(r, api.NodesFootprint, func(r *http.Request) (any, error) {
		return s.cfg.Roles.Footprint(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
}

// readOptional is readJSON for a route whose body may be empty, standing for v as it is.
func readOptional(r *http.Request, limit int64, v any) error {
	body, err := readBody(r, limit)
	if err != nil || len(body) == 0 {
		return err
	}
	return decodeStrict(body, v)
}
