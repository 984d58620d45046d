package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func (s *Server) planeRoutes(r chi.Router) {
	s.handle(r, api.PlaneShowStatus, s.planeStatus)
	s.handle(r, api.PlaneForgetReplica, s.forgetReplica)
}

func (s *Server) planeStatus(r *http.Request) (any, error) {
	reps, err := s.store.ReplicaList(r.Context(), store.ReplicaListParams{Now: s.now()})
	return api.PlaneStatus{Answered: s.cfg.ReplicaID, Replicas: apiconv.Each(reps, apiconv.Replica)}, err
}

// forgetReplica removes a replica that stopped heartbeating; the store notes who did it on the
// replica's plane:replica_missing incident, and the plane's log keeps it too.
func (s *Server) forgetReplica(r *http.Request) (any, error) {
	id := chi.URLParam(r, "id")
	by := tokenFrom(r.Context()).Name
	rep, err := s.store.ReplicaForget(r.Context(), store.ReplicaForgetParams{ID: id, By: by, Now: s.now()})
	if err != nil {
		return nil, err
	}
	s.log.Warn("replica forgotten", "replica", id, "by", by, "address", rep.Address, "heartbeat_at", rep.HeartbeatAt)
	return apiconv.Replica(rep), nil
}

// readiness is GET /readyz's answer when this replica can serve.
type readiness struct {
	Ready   bool              `json:"ready"`
	Replica string            `json:"replica,omitempty"`
	Checks  map[string]string `json:"checks"`
}

// readyz reports whether this replica can serve: its store answers, the database's migrations are
// exactly this binary's, and its master key is loaded. /healthz stays the liveness answer.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	checks := []struct {
		name string
		run  func() error
	}{
		{"store", func() error { return s.store.Ping(ctx) }},
		{"migrations", func() error { return s.store.MigrationCheck(ctx) }},
		{"master_key", func() error {
			if s.cfg.MasterKeyID == "" {
				return errcode.New(errcode.ReplicaNotReady, "no master key is loaded")
			}
			return nil
		}},
	}
	out := readiness{Ready: true, Replica: s.cfg.ReplicaID, Checks: map[string]string{}}
	for _, c := range checks {
		if err := c.run(); err != nil {
			s.writeError(w, r, errcode.Wrap(err, errcode.ReplicaNotReady, "replica %s is not ready: %s", s.cfg.ReplicaID, c.name).
				With(errcode.DetailReason, c.name))
			return
		}
		out.Checks[c.name] = "ok"
	}
	writeJSON(w, http.StatusOK, out)
}
