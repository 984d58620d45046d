package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
)

func (s *Server) planeRoutes(r chi.Router) {
	s.handle(r, api.PlaneShowStatus, func(r *http.Request) (any, error) {
		return s.cfg.Health.Status(r.Context(), tokenFrom(r.Context()))
	})
	s.handle(r, api.PlaneForgetReplica, func(r *http.Request) (any, error) {
		return s.cfg.Health.Forget(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
}

// healthz is the liveness answer: the store answers.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Health.Alive(r.Context()); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// readyz reports whether this replica can serve; /healthz stays the liveness answer.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	out, err := s.cfg.Health.Ready(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
