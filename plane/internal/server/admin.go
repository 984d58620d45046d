package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/audit"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type tokenKey struct{}

// tokenFrom is the token a request runs as: the bearer the server authenticated, or the UI's session's.
func tokenFrom(ctx context.Context) api.Token {
	t, _ := ctx.Value(tokenKey{}).(api.Token)
	return t
}

// authenticate resolves the bearer token; every admin route needs one. A request that names no token,
// or one that is unknown or revoked, is charged to its source address.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !tokens.LooksLikeToken(raw) {
			if err := s.addrLimit.allow(sourceAddr(r), s.now()); err != nil {
				s.writeError(w, r, err)
				return
			}
			s.writeError(w, r, errcode.New(errcode.AuthRequired, "send Authorization: Bearer <token>; make one with lexicon-plane token create"))
			return
		}
		tok, err := s.cfg.Tokens.Authenticate(r.Context(), raw)
		if errcode.Has(err, errcode.AuthRequired) {
			if lerr := s.addrLimit.allow(sourceAddr(r), s.now()); lerr != nil {
				err = lerr
			}
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenKey{}, tok)))
	})
}

// need refuses a token below role.
func need(ctx context.Context, role api.Role) error { return tokens.Need(tokenFrom(ctx), role) }

// handle registers an admin route of the table: the route's role is checked, then the handler's answer
// is written with the route's status, or its error as the envelope.
func (s *Server) handle(r chi.Router, rt api.Route, h func(r *http.Request) (any, error)) {
	s.handleRaw(r, rt, func(_ http.ResponseWriter, r *http.Request) (any, error) { return h(r) })
}

// handleRaw is handle for a handler that needs the response writer before it answers (to cap a
// streamed body).
func (s *Server) handleRaw(r chi.Router, rt api.Route, h func(w http.ResponseWriter, r *http.Request) (any, error)) {
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := need(r.Context(), rt.Role); err != nil {
			s.writeError(w, r, err)
			return
		}
		v, err := h(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if len(rt.Params()) == 0 {
			audit.NoteTarget(r.Context(), madeTarget(v))
		}
		writeJSON(w, rt.Status, v)
	})
	r.Method(rt.Method, rt.Pattern, serve)
}

// audited records every request of a mutating route of the table as an audit event, the refusals
// of the role check and of any group's middleware included: it runs on the admin router, right after
// authentication, and finds the request's route in the router itself, so a route added to the table
// is audited without a line of its own.
func (s *Server) audited(mux chi.Routes) func(http.Handler) http.Handler {
	byKey := map[string]api.Route{}
	for _, rt := range api.Routes() {
		if rt.Mutating() {
			byKey[rt.String()] = rt
		}
	}
	return func(next http.Handler) http.Handler {
		return s.cfg.Audit.Wrap(next, func(r *http.Request) (audit.Intent, bool) {
			path := r.URL.Path
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePath != "" {
				path = rc.RoutePath
			}
			found := chi.NewRouteContext()
			rt, ok := byKey[r.Method+" "+mux.Find(found, r.Method, path)]
			if !ok {
				return audit.Intent{}, false
			}
			tok := tokenFrom(r.Context())
			return audit.Intent{Via: audit.ViaAPI, ActorID: tok.ID, Actor: tok.Name, Address: sourceAddr(r),
				Operation: rt.OperationID(), Target: strings.Join(found.URLParams.Values, "/")}, true
		}, s.writeError)
	}
}

// madeTarget is what a route without parameters made, for its audit event: the answer's id, name or
// sequence, or that of the one object the answer wraps ({"token": {"id": …}, "secret": …}), read from
// its JSON by those keys alone, so that no other field (a new token's secret) is ever looked at.
func madeTarget(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return idOf(b, 1)
}

func idOf(b []byte, depth int) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return ""
	}
	for _, key := range []string{"id", "name", "sequence"} {
		var s string
		if raw, ok := fields[key]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
		var n json.Number
		if raw, ok := fields[key]; ok && json.Unmarshal(raw, &n) == nil {
			return n.String()
		}
	}
	if depth == 0 {
		return ""
	}
	var found string
	for _, raw := range fields {
		if len(raw) > 0 && raw[0] == '{' {
			if found != "" {
				return "" // more than one object: which one was made is not the answer's to say
			}
			found = idOf(raw, depth-1)
		}
	}
	return found
}

func (s *Server) adminRoutes(r chi.Router) {
	r.Use(s.authenticate)
	if s.cfg.Audit != nil {
		r.Use(s.audited(r))
	}
	s.adminTable(r)
}

func (s *Server) adminTable(r chi.Router) {
	s.handle(r, api.Whoami, func(r *http.Request) (any, error) {
		return tokenFrom(r.Context()), nil
	})
	s.tokenRoutes(r)
	s.joinRoutes(r)
	s.nodeRoutes(r)
	s.jobRoutes(r)
	s.incidentRoutes(r)
	s.planeRoutes(r)
	s.releaseRoutes(r)
	s.driverRoutes(r)
	r.Method(api.Metrics.Method, api.Metrics.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := need(r.Context(), api.Metrics.Role); err != nil {
			s.writeError(w, r, err)
			return
		}
		s.metrics.Handler().ServeHTTP(w, r)
	}))
	s.rolloutRoutes(r)
	s.machineRoutes(r)
	s.scheduleRoutes(r)
	s.securityRoutes(r)
	s.roleRoutes(r)
	s.provisionRoutes(r)
	s.backupRoutes(r)
	s.handle(r, api.AuditList, func(r *http.Request) (any, error) {
		q, err := api.ParseAuditListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Audit.List(r.Context(), tokenFrom(r.Context()), q)
	})
}

func (s *Server) tokenRoutes(r chi.Router) {
	s.handle(r, api.TokensList, func(r *http.Request) (any, error) {
		return s.cfg.Tokens.List(r.Context(), tokenFrom(r.Context()))
	})
	s.handle(r, api.TokensCreate, func(r *http.Request) (any, error) {
		var req api.TokenRequest
		if err := readJSON(r, 4<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Tokens.Create(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.TokensRevoke, func(r *http.Request) (any, error) {
		return s.cfg.Tokens.Revoke(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
}

func (s *Server) joinRoutes(r chi.Router) {
	s.handle(r, api.JoinsList, func(r *http.Request) (any, error) {
		q, err := api.ParseJoinsListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Joins.List(r.Context(), tokenFrom(r.Context()), q)
	})
	s.handle(r, api.JoinsApprove, func(r *http.Request) (any, error) {
		var req api.ApproveRequest
		if err := readJSON(r, 4<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Joins.Approve(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
	s.handle(r, api.JoinsReject, func(r *http.Request) (any, error) {
		return s.cfg.Joins.Reject(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
}

func (s *Server) nodeRoutes(r chi.Router) {
	s.handle(r, api.NodesList, func(r *http.Request) (any, error) {
		q, err := api.ParseNodesListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Nodes.List(r.Context(), tokenFrom(r.Context()), q)
	})
	s.handle(r, api.NodesShow, func(r *http.Request) (any, error) {
		return s.cfg.Nodes.Show(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
	s.handle(r, api.FleetShow, func(r *http.Request) (any, error) {
		return s.cfg.Nodes.Fleet(r.Context(), tokenFrom(r.Context()))
	})
	s.handle(r, api.NodesDisconnect, func(r *http.Request) (any, error) {
		return s.cfg.Nodes.Disconnect(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
	s.handle(r, api.NodesWord, func(r *http.Request) (any, error) {
		return s.cfg.Nodes.Word(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), chi.URLParam(r, "word"))
	})
	s.handle(r, api.NodesLabel, func(r *http.Request) (any, error) {
		var req api.LabelRequest
		if err := readJSON(r, 16<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Nodes.Label(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
}

func (s *Server) jobRoutes(r chi.Router) {
	s.handle(r, api.BatchesCreate, func(r *http.Request) (any, error) {
		var req api.BatchRequest
		if err := readJSON(r, 256<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Jobs.CreateBatch(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.BatchesList, func(r *http.Request) (any, error) {
		q, err := api.ParseBatchesListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Jobs.ListBatches(r.Context(), tokenFrom(r.Context()), q)
	})
	s.handle(r, api.BatchesShow, func(r *http.Request) (any, error) {
		return s.cfg.Jobs.ShowBatch(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
	s.handle(r, api.BatchesJobs, func(r *http.Request) (any, error) {
		q, err := api.ParseBatchJobsQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Jobs.BatchJobs(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), q)
	})
	s.handle(r, api.BatchesSkips, func(r *http.Request) (any, error) {
		q, err := api.ParseBatchesListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Jobs.BatchSkips(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), q)
	})
	s.handle(r, api.JobsCreate, func(r *http.Request) (any, error) {
		var req api.JobRequest
		if err := readJSON(r, 256<<10, &req); err != nil {
			return nil, err
		}
		return s.cfg.Jobs.Create(r.Context(), tokenFrom(r.Context()), req)
	})
	s.handle(r, api.JobsList, func(r *http.Request) (any, error) {
		q, err := api.ParseJobsListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return s.cfg.Jobs.List(r.Context(), tokenFrom(r.Context()), q)
	})
	s.handle(r, api.JobsShow, func(r *http.Request) (any, error) {
		return s.cfg.Jobs.Show(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
	s.handle(r, api.JobsCancel, func(r *http.Request) (any, error) {
		return s.cfg.Jobs.Cancel(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"))
	})
	s.handle(r, api.JobsMarkFailed, func(r *http.Request) (any, error) {
		body, err := readBody(r, 4<<10)
		if err != nil {
			return nil, err
		}
		req := api.MarkFailedRequest{Message: "marked failed by an operator"} // the body is optional
		if len(body) > 0 {
			if err := decodeStrict(body, &req); err != nil {
				return nil, err
			}
		}
		return s.cfg.Jobs.MarkFailed(r.Context(), tokenFrom(r.Context()), chi.URLParam(r, "id"), req)
	})
}
