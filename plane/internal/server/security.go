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
}
