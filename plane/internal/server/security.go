package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

func (s *Server) securityRoutes(r chi.Router) {
	s.handle(r, api.FleetSecurity, func(r *http.Request) (any, error) {
		return s.cfg.Security.View(r.Context(), tokenFrom(r.Context()))
	})
	s.handle(r, api.FleetSecurityCritical, func(r *http.Request) (any, error) {
		return s.cfg.Security.Critical(r.Context(), tokenFrom(r.Context()))
	})
	s.handle(r, api.FleetSecurityCriticalSet, func(r *http.Request) (any, error) {
		var req api.SecurityCriticalRequest
		// 100 patterns of 128 bytes, quoted, fit in 16 KiB.
		if err := readJSON(r, 16<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Security.CriticalSet(r.Context(), tokenFrom(r.Context()), req)
	})
}
