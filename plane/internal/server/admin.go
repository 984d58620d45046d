package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TokenPrefix marks Lexicon admin tokens, so a leaked one is recognisable in a scanner's rules.
const TokenPrefix = "lxt_"

// NewToken makes an admin token and the hash the store keeps; the token itself is shown once.
func NewToken() (token, hash string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token)
}

// HashToken is how a token is stored and looked up.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

var roleRank = map[store.Role]int{store.RoleViewer: 1, store.RoleOperator: 2, store.RoleAdmin: 3}

type tokenKey struct{}

func tokenFrom(ctx context.Context) store.Token {
	t, _ := ctx.Value(tokenKey{}).(store.Token)
	return t
}

// authenticate resolves the bearer token; every admin route needs one.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !strings.HasPrefix(raw, TokenPrefix) {
			if err := s.addrLimit.allow(sourceAddr(r), s.now()); err != nil {
				s.writeError(w, r, err)
				return
			}
			s.writeError(w, r, errcode.New(errcode.AuthRequired, "send Authorization: Bearer <token>; make one with lexicon-plane token create"))
			return
		}
		tok, err := s.store.TokenGetByHash(r.Context(), store.TokenGetByHashParams{Hash: HashToken(raw)})
		if errcode.Has(err, errcode.TokenNotFound) || errcode.Has(err, errcode.TokenRevoked) {
			if lerr := s.addrLimit.allow(sourceAddr(r), s.now()); lerr != nil {
				err = lerr
			} else {
				err = errcode.New(errcode.AuthRequired, "the token is unknown or revoked")
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
func need(ctx context.Context, role store.Role) error {
	t := tokenFrom(ctx)
	if roleRank[t.Role] < roleRank[role] {
		return errcode.New(errcode.AuthForbidden, "this needs the %s role; token %s is %s", role, t.Name, t.Role).With(errcode.DetailNeed, string(role))
	}
	return nil
}

// with wraps an admin handler: role check, then the handler's result or error.
func (s *Server) with(role store.Role, h func(r *http.Request) (int, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := need(r.Context(), role); err != nil {
			s.writeError(w, r, err)
			return
		}
		code, v, err := h(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, code, v)
	}
}

func (s *Server) adminRoutes(r chi.Router) {
	r.Use(s.authenticate)
	r.Get("/whoami", s.with(store.RoleViewer, func(r *http.Request) (int, any, error) {
		return http.StatusOK, tokenFrom(r.Context()), nil
	}))
	r.Get("/joins", s.with(store.RoleViewer, s.joinList))
	r.Post("/joins/{id}/approve", s.with(store.RoleAdmin, s.joinApprove))
	r.Post("/joins/{id}/reject", s.with(store.RoleAdmin, s.joinReject))
	r.Get("/nodes", s.with(store.RoleViewer, s.nodeList))
	r.Get("/nodes/{id}", s.with(store.RoleViewer, s.nodeShow))
	r.Post("/nodes/{id}/disconnect", s.with(store.RoleAdmin, s.nodeDisconnect))
	r.Post("/jobs", s.with(store.RoleOperator, s.jobCreate))
	r.Get("/jobs", s.with(store.RoleViewer, s.jobList))
	r.Get("/jobs/{id}", s.with(store.RoleViewer, s.jobShow))
	r.Post("/jobs/{id}/cancel", s.with(store.RoleOperator, s.jobCancel))
	r.Post("/jobs/{id}/mark-failed", s.with(store.RoleOperator, s.jobMarkFailed))
	s.incidentRoutes(r)
	r.Get("/releases", s.with(store.RoleViewer, func(r *http.Request) (int, any, error) {
		list, err := s.store.ReleaseList(r.Context(), store.ReleaseListParams{Limit: limitParam(r)})
		return http.StatusOK, map[string]any{"releases": nonNil(list)}, err
	}))
	r.Post("/releases", func(w http.ResponseWriter, r *http.Request) {
		if err := need(r.Context(), store.RoleAdmin); err != nil {
			s.writeError(w, r, err)
			return
		}
		s.publish(w, r)
	})
	s.driverRoutes(r)
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func limitParam(r *http.Request) int {
	n, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	return n
}

func (s *Server) joinList(r *http.Request) (int, any, error) {
	res, err := s.store.JoinList(r.Context(), store.JoinListParams{
		Status: store.JoinStatus(r.URL.Query().Get("status")), Limit: limitParam(r), Cursor: r.URL.Query().Get("cursor"), Now: s.now(),
	})
	res.Joins = nonNil(res.Joins)
	return http.StatusOK, res, err
}

type approveRequest struct {
	Fingerprint string `json:"fingerprint"`
	Name        string `json:"name,omitempty"`
}

func (s *Server) joinApprove(r *http.Request) (int, any, error) {
	body, err := readBody(r, 4<<10)
	if err != nil {
		return 0, nil, err
	}
	var req approveRequest
	if err := decodeStrict(body, &req); err != nil {
		return 0, nil, err
	}
	if req.Fingerprint == "" {
		return 0, nil, errcode.New(errcode.RequestMalformed, "approval needs the fingerprint the machine shows (SHA256:...)").With(errcode.DetailField, "fingerprint")
	}
	res, err := s.store.JoinApprove(r.Context(), store.JoinApproveParams{
		ID: chi.URLParam(r, "id"), Fingerprint: req.Fingerprint, Name: req.Name, By: tokenFrom(r.Context()).Name, Now: s.now(),
	})
	if err != nil {
		return 0, nil, err
	}
	s.log.Info("join approved", "join", res.Join.ID, "node", res.Node.ID, "name", res.Node.Name, "fingerprint", res.Node.Fingerprint, "by", tokenFrom(r.Context()).Name)
	return http.StatusOK, res, nil
}

func (s *Server) joinReject(r *http.Request) (int, any, error) {
	j, err := s.store.JoinReject(r.Context(), store.JoinRejectParams{ID: chi.URLParam(r, "id"), By: tokenFrom(r.Context()).Name, Now: s.now()})
	if err == nil {
		s.log.Info("join rejected; its key is retired", "join", j.ID, "fingerprint", j.Fingerprint, "by", tokenFrom(r.Context()).Name)
	}
	return http.StatusOK, j, err
}

func (s *Server) nodeList(r *http.Request) (int, any, error) {
	res, err := s.store.NodeList(r.Context(), store.NodeListParams{
		State: store.NodeState(r.URL.Query().Get("state")), Limit: limitParam(r), Cursor: r.URL.Query().Get("cursor"),
	})
	res.Nodes = nonNil(res.Nodes)
	return http.StatusOK, res, err
}

// nodeByRef finds a node by id or by the name of an active node.
func (s *Server) nodeByRef(ctx context.Context, ref string) (store.Node, error) {
	n, err := s.store.NodeGet(ctx, store.NodeGetParams{ID: ref})
	if err == nil {
		return n, nil
	}
	return s.store.NodeGet(ctx, store.NodeGetParams{Name: ref})
}

func (s *Server) nodeShow(r *http.Request) (int, any, error) {
	n, err := s.nodeByRef(r.Context(), chi.URLParam(r, "id"))
	return http.StatusOK, n, err
}

func (s *Server) nodeDisconnect(r *http.Request) (int, any, error) {
	n, err := s.nodeByRef(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return 0, nil, err
	}
	res, err := s.store.NodeDisconnect(r.Context(), store.NodeEndParams{ID: n.ID, By: tokenFrom(r.Context()).Name, Now: s.now()})
	if err == nil {
		s.log.Info("node disconnected", "node", n.ID, "name", n.Name, "by", tokenFrom(r.Context()).Name)
	}
	return http.StatusOK, res, err
}

// JobRequest is what an admin asks a node to do: a word and its params, never a command.
type JobRequest struct {
	Node   string          `json:"node"`
	Word   string          `json:"word"`
	Params json.RawMessage `json:"params"`
}

// jobCreate checks the job on the plane for a good error (the node checks again and is the authority):
// the node must report the word, the token's role must cover the word's class as the signed manifest
// states it, and the params must satisfy the word's schema.
func (s *Server) jobCreate(r *http.Request) (int, any, error) {
	ctx := r.Context()
	body, err := readBody(r, 256<<10)
	if err != nil {
		return 0, nil, err
	}
	var req JobRequest
	if err := decodeStrict(body, &req); err != nil {
		return 0, nil, err
	}
	if len(req.Params) == 0 {
		req.Params = json.RawMessage(`{}`)
	}
	node, err := s.nodeByRef(ctx, req.Node)
	if err != nil {
		return 0, nil, err
	}
	ref, ok := node.Word(req.Word)
	if !ok {
		return 0, nil, errcode.New(errcode.JobWordUnavailable,
			"node %s does not report the word %q: publish a release that pins it (lexicon releases publish) and wait for the node to load it, or choose a node that reports it (lexicon nodes show %s)",
			node.Name, req.Word, node.Name).With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, req.Word)
	}
	m, known, err := s.manifests.word(ctx, ref.Digest)
	if err != nil {
		return 0, nil, err
	}
	if !known {
		return 0, nil, errcode.New(errcode.JobWordUnavailable,
			"node %s reports %s with digest %s, which no release on this plane pins; publish its release or wait for the node to update",
			node.Name, req.Word, ref.Digest).With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, req.Word)
	}
	role := store.RoleOperator
	if m.Class == manifest.ClassDestructive {
		role = store.RoleAdmin
	}
	if err := need(ctx, role); err != nil {
		return 0, nil, err
	}
	if err := m.CheckParams(req.Params); err != nil {
		return 0, nil, err
	}
	var budget time.Duration
	if ms := m.Limits.WallTimeMS; ms > 0 {
		budget = time.Duration(ms)*time.Millisecond + time.Minute // fetching and reporting take time too
	}
	job, err := s.store.JobCreate(ctx, store.JobCreateParams{
		NodeID: node.ID, Word: req.Word, WordDigest: ref.Digest, Class: string(m.Class), Params: req.Params,
		Budget: budget, CreatedBy: tokenFrom(ctx).Name, Now: s.now(),
	})
	if err != nil {
		return 0, nil, err
	}
	s.log.Info("job queued", "job", job.ID, "node", node.ID, "word", job.Word, "by", job.CreatedBy)
	return http.StatusCreated, job, nil
}

func (s *Server) jobList(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	nodeID := q.Get("node")
	if nodeID != "" {
		n, err := s.nodeByRef(r.Context(), nodeID)
		if err != nil {
			return 0, nil, err
		}
		nodeID = n.ID
	}
	res, err := s.store.JobList(r.Context(), store.JobListParams{NodeID: nodeID, State: store.JobState(q.Get("state")), Limit: limitParam(r), Cursor: q.Get("cursor")})
	res.Jobs = nonNil(res.Jobs)
	return http.StatusOK, res, err
}

func (s *Server) jobShow(r *http.Request) (int, any, error) {
	j, err := s.store.JobGet(r.Context(), store.JobGetParams{ID: chi.URLParam(r, "id")})
	return http.StatusOK, j, err
}

func (s *Server) jobCancel(r *http.Request) (int, any, error) {
	j, err := s.store.JobCancel(r.Context(), store.JobCancelParams{ID: chi.URLParam(r, "id"), By: tokenFrom(r.Context()).Name, Now: s.now()})
	return http.StatusOK, j, err
}

type markFailedRequest struct {
	Message string `json:"message"`
}

func (s *Server) jobMarkFailed(r *http.Request) (int, any, error) {
	body, err := readBody(r, 4<<10)
	if err != nil {
		return 0, nil, err
	}
	req := markFailedRequest{Message: "marked failed by an operator"}
	if len(body) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return 0, nil, err
		}
	}
	j, err := s.store.JobMarkFailed(r.Context(), store.JobMarkFailedParams{ID: chi.URLParam(r, "id"), By: tokenFrom(r.Context()).Name, Message: req.Message, Now: s.now()})
	return http.StatusOK, j, err
}
