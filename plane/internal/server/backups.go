package server

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// maxBackupBody bounds a target's or a policy's body: 64 paths of 4 KiB and change.
const maxBackupBody = 512 << 10

func (s *Server) backupRoutes(r chi.Router) {
	b := s.cfg.Backups
	if b == nil {
		for _, rt := range []api.Route{api.BackupsFleet, api.BackupsNode, api.BackupsRestore, api.BackupTargetsList, api.BackupTargetsAdd, api.BackupTargetsShow,
			api.BackupTargetsRemove, api.BackupTargetsCheck, api.BackupPoliciesList, api.BackupPolicyFleet, api.BackupPolicyShow,
			api.BackupPolicySet, api.BackupPolicyClear} {
			s.handle(r, rt, func(*http.Request) (any, error) {
				return nil, errcode.New(errcode.InternalError, "this plane has no backups room")
			})
		}
		return
	}
	s.handle(r, api.BackupsFleet, func(r *http.Request) (any, error) { return b.Fleet(r.Context(), tokenFrom(r.Context())) })
	s.handle(r, api.BackupsNode, byID(b.Node))
	s.handle(r, api.BackupsRestore, func(r *http.Request) (any, error) {
		var req api.BackupRestoreRequest
		if err := readJSON(r, maxBackupBody, &req); err != nil {
			return nil, err
		}
		return b.Restore(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
	s.handle(r, api.BackupTargetsList, func(r *http.Request) (any, error) { return b.ListTargets(r.Context(), tokenFrom(r.Context())) })
	s.handle(r, api.BackupTargetsAdd, func(r *http.Request) (any, error) {
		var req api.BackupTargetRequest
		if err := readJSON(r, maxBackupBody, &req); err != nil {
			return nil, err
		}
		return b.AddTarget(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.BackupTargetsShow, byName(b.ShowTarget))
	s.handle(r, api.BackupTargetsRemove, byName(b.RemoveTarget))
	s.handle(r, api.BackupTargetsCheck, byName(b.CheckTarget))
	s.handle(r, api.BackupPoliciesList, func(r *http.Request) (any, error) { return b.ListPolicies(r.Context(), tokenFrom(r.Context())) })
	s.handle(r, api.BackupPolicyFleet, func(r *http.Request) (any, error) {
		var req api.BackupPolicy
		if err := readJSON(r, maxBackupBody, &req); err != nil {
			return nil, err
		}
		return b.SetPolicy(r.Context(), tokenFrom(r.Context()), "", req)
	})
	s.handle(r, api.BackupPolicyShow, byID(b.ShowPolicy))
	s.handle(r, api.BackupPolicySet, func(r *http.Request) (any, error) {
		var req api.BackupPolicy
		if err := readJSON(r, maxBackupBody, &req); err != nil {
			return nil, err
		}
		return b.SetPolicy(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
	s.handle(r, api.BackupPolicyClear, byID(b.ClearPolicy))
}

// byID adapts a room's method on the route's {id}.
func byID[T any](f func(context.Context, api.Token, string) (T, error)) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		return f(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	}
}
