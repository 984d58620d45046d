package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"golang.org/x/mod/semver"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry"
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
func need(ctx context.Context, role api.Role) error {
	t := tokenFrom(ctx)
	if !api.Role(t.Role).Covers(role) {
		return errcode.New(errcode.AuthForbidden, "this needs the %s role; token %s is %s", role, t.Name, t.Role).With(errcode.DetailNeed, string(role))
	}
	return nil
}

// handle registers an admin route of the table: the route's role is checked, then the handler's answer
// is written with the route's status, or its error as the envelope.
func (s *Server) handle(r chi.Router, rt api.Route, h func(r *http.Request) (any, error)) {
	r.Method(rt.Method, rt.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := need(r.Context(), rt.Role); err != nil {
			s.writeError(w, r, err)
			return
		}
		v, err := h(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, rt.Status, v)
	}))
}

func (s *Server) adminRoutes(r chi.Router) {
	r.Use(s.authenticate)
	s.adminTable(r)
}

// AdminAs is the admin API's route table without the bearer check, serving every request as tok: the
// web UI calls it with its session's token, so a page runs the very rules, role checks and answers of
// the API rather than a copy of them. Paths are relative to api.Prefix.
func (s *Server) AdminAs() (h http.Handler, as func(ctx context.Context, tok store.Token) context.Context) {
	r := chi.NewRouter()
	s.adminTable(r)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, notFound(r)) })
	return r, func(ctx context.Context, tok store.Token) context.Context {
		return context.WithValue(ctx, tokenKey{}, tok)
	}
}

func (s *Server) adminTable(r chi.Router) {
	s.handle(r, api.Whoami, func(r *http.Request) (any, error) {
		return tokenToAPI(tokenFrom(r.Context())), nil
	})
	s.handle(r, api.TokensList, func(r *http.Request) (any, error) {
		list, err := s.store.TokenList(r.Context(), store.TokenListParams{IncludeRevoked: true})
		return api.TokenList{Tokens: each(list, tokenToAPI)}, err
	})
	s.handle(r, api.TokensCreate, s.tokenCreate)
	s.handle(r, api.TokensRevoke, func(r *http.Request) (any, error) {
		t, err := s.store.TokenRevoke(r.Context(), store.TokenRevokeParams{ID: chi.URLParam(r, "id"), Now: s.now()})
		if err != nil {
			return nil, err
		}
		s.log.Info("token revoked", "token", t.ID, "name", t.Name, "by", tokenFrom(r.Context()).Name)
		return tokenToAPI(t), nil
	})
	s.handle(r, api.JoinsList, s.joinList)
	s.handle(r, api.JoinsApprove, s.joinApprove)
	s.handle(r, api.JoinsReject, s.joinReject)
	s.handle(r, api.NodesList, s.nodeList)
	s.handle(r, api.NodesShow, s.nodeShow)
	s.handle(r, api.FleetShow, s.fleetShow)
	s.handle(r, api.NodesDisconnect, s.nodeDisconnect)
	s.handle(r, api.NodesWord, s.nodeWord)
	s.handle(r, api.JobsCreate, s.jobCreate)
	s.handle(r, api.JobsList, s.jobList)
	s.handle(r, api.JobsShow, s.jobShow)
	s.handle(r, api.JobsCancel, s.jobCancel)
	s.handle(r, api.JobsMarkFailed, s.jobMarkFailed)
	s.incidentRoutes(r)
	s.planeRoutes(r)
	s.handle(r, api.ReleasesList, func(r *http.Request) (any, error) {
		q, err := api.ParseReleasesListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		list, err := s.store.ReleaseList(r.Context(), store.ReleaseListParams{Limit: q.Limit})
		return api.ReleaseList{Releases: each(list, releaseToAPI)}, err
	})
	s.handle(r, api.ReleasesShow, s.releaseShow)
	s.handle(r, api.ReleasesDiff, s.releaseDiff)
	r.Method(api.ReleasesPublish.Method, api.ReleasesPublish.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := need(r.Context(), api.ReleasesPublish.Role); err != nil {
			s.writeError(w, r, err)
			return
		}
		s.publish(w, r)
	}))
	s.driverRoutes(r)
	r.Method(api.Metrics.Method, api.Metrics.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := need(r.Context(), api.Metrics.Role); err != nil {
			s.writeError(w, r, err)
			return
		}
		s.metrics.Handler().ServeHTTP(w, r)
	}))
	s.rolloutRoutes(r)
	s.provisionRoutes(r)
}

// tokenCreate makes a token; the store checks the name and role. The secret is in the answer only.
func (s *Server) tokenCreate(r *http.Request) (any, error) {
	var req api.TokenRequest
	if err := readJSON(r, 4<<10, &req); err != nil {
		return nil, err
	}
	secret, hash := NewToken()
	t, err := s.store.TokenCreate(r.Context(), store.TokenCreateParams{Name: req.Name, Role: store.Role(req.Role), Hash: hash, Now: s.now()})
	if err != nil {
		return nil, err
	}
	s.log.Info("token created", "token", t.ID, "name", t.Name, "role", t.Role, "by", tokenFrom(r.Context()).Name)
	return api.NewToken{Token: tokenToAPI(t), Secret: secret}, nil
}

func (s *Server) joinList(r *http.Request) (any, error) {
	q, err := api.ParseJoinsListQuery(r.URL.Query())
	if err != nil {
		return nil, err
	}
	res, err := s.store.JoinList(r.Context(), store.JoinListParams{
		Status: store.JoinStatus(q.Status), Limit: q.Limit, Cursor: q.Cursor, Now: s.now(),
	})
	return api.JoinList{Joins: each(res.Joins, joinToAPI), NextCursor: res.NextCursor}, err
}

func (s *Server) joinApprove(r *http.Request) (any, error) {
	var req api.ApproveRequest
	if err := readJSON(r, 4<<10, &req); err != nil {
		return nil, err
	}
	if req.Fingerprint == "" {
		return nil, errcode.New(errcode.RequestMalformed, "approval needs the fingerprint the machine shows (SHA256:...)").With(errcode.DetailField, "fingerprint")
	}
	res, err := s.store.JoinApprove(r.Context(), store.JoinApproveParams{
		ID: chi.URLParam(r, "id"), Fingerprint: req.Fingerprint, Name: req.Name, By: tokenFrom(r.Context()).Name, Now: s.now(),
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("join approved", "join", res.Join.ID, "node", res.Node.ID, "name", res.Node.Name, "fingerprint", res.Node.Fingerprint, "by", tokenFrom(r.Context()).Name)
	return api.Approved{Join: joinToAPI(res.Join), Node: nodeToAPI(res.Node)}, nil
}

func (s *Server) joinReject(r *http.Request) (any, error) {
	j, err := s.store.JoinReject(r.Context(), store.JoinRejectParams{ID: chi.URLParam(r, "id"), By: tokenFrom(r.Context()).Name, Now: s.now()})
	if err != nil {
		return nil, err
	}
	s.log.Info("join rejected; its key is retired", "join", j.ID, "fingerprint", j.Fingerprint, "by", tokenFrom(r.Context()).Name)
	return joinToAPI(j), nil
}

func (s *Server) nodeList(r *http.Request) (any, error) {
	q, err := api.ParseNodesListQuery(r.URL.Query())
	if err != nil {
		return nil, err
	}
	filter := store.NodeFilter{Word: q.Word, AgentVersion: q.Version}
	if q.Label != "" {
		k, v, ok := strings.Cut(q.Label, "=")
		if !ok {
			return nil, errcode.New(errcode.RequestMalformed, "label is key=value, not %q", q.Label).With(errcode.DetailField, "label")
		}
		filter.LabelKey, filter.LabelValue = k, v
	}
	res, err := s.store.NodeList(r.Context(), store.NodeListParams{State: store.NodeState(q.State), Limit: q.Limit, Cursor: q.Cursor, Filter: filter})
	if err != nil {
		return nil, err
	}
	agents, err := s.agentReleases(r.Context())
	if err != nil {
		return nil, err
	}
	out := api.NodeList{Nodes: each(res.Nodes, nodeToAPI), NextCursor: res.NextCursor}
	for i := range out.Nodes {
		out.Nodes[i].ReleasesBehind = behind(agents, out.Nodes[i].AgentVersion)
	}
	return out, nil
}

// agentReleases lists the versions of the newest releases (up to 100) that pin an agent binary.
func (s *Server) agentReleases(ctx context.Context) ([]string, error) {
	rels, err := s.store.ReleaseList(ctx, store.ReleaseListParams{Limit: 100})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rel := range rels {
		for _, a := range rel.Artifacts {
			if strings.HasPrefix(a.Name, registry.AgentSubjectPrefix) {
				out = append(out, rel.Version)
				break
			}
		}
	}
	return out, nil
}

// behind counts the distinct agent versions above version; 0 for a version that is not semver (an
// agent built by hand), which the plane cannot place.
func behind(versions []string, version string) int {
	if !semver.IsValid("v" + version) {
		return 0
	}
	seen := map[string]bool{}
	for _, v := range versions {
		if semver.Compare("v"+v, "v"+version) > 0 {
			seen[v] = true
		}
	}
	return len(seen)
}

// nodeByRef finds a node by id or by the name of an active node.
func (s *Server) nodeByRef(ctx context.Context, ref string) (store.Node, error) {
	n, err := s.store.NodeGet(ctx, store.NodeGetParams{ID: ref})
	if err == nil {
		return n, nil
	}
	return s.store.NodeGet(ctx, store.NodeGetParams{Name: ref})
}

func (s *Server) nodeShow(r *http.Request) (any, error) {
	n, err := s.nodeByRef(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return nil, err
	}
	leases, err := s.store.LeaseList(r.Context(), store.LeaseListParams{Subject: n.ID, Live: true, Now: s.now()})
	if err != nil {
		return nil, err
	}
	agents, err := s.agentReleases(r.Context())
	if err != nil {
		return nil, err
	}
	cps, err := s.store.NodeCheckpointList(r.Context(), store.NodeCheckpointListParams{NodeID: n.ID})
	if err != nil {
		return nil, err
	}
	out := nodeToAPI(n)
	out.Leases = leasesToAPI(leases)
	out.ReleasesBehind = behind(agents, n.AgentVersion)
	out.Checkpoints = each(cps, func(c store.NodeCheckpoint) api.Checkpoint {
		return api.Checkpoint{Origin: c.Origin, Size: c.Size, RootHash: c.RootHash, ReportedAt: c.ReportedAt}
	})
	return out, nil
}

// nodeWord finds the word a node reports and the manifest that pins its module, by the same lookup
// jobCreate checks a job with, so a form made from it asks for what the plane will accept.
func (s *Server) nodeWord(r *http.Request) (any, error) {
	ctx := r.Context()
	node, err := s.nodeByRef(ctx, chi.URLParam(r, "id"))
	if err != nil {
		return nil, err
	}
	word := chi.URLParam(r, "word")
	ref, ok := node.Word(word)
	if !ok {
		return nil, errcode.New(errcode.JobWordUnavailable, "node %s does not report the word %q", node.Name, word).
			With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, word)
	}
	m, known, err := s.manifests.word(ctx, word, ref.Digest)
	if err != nil {
		return nil, err
	}
	if !known {
		return nil, errcode.New(errcode.JobWordUnavailable, "node %s reports %s with digest %s, which no release on this plane pins",
			node.Name, word, ref.Digest).With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, word)
	}
	params := m.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	return api.Word{Name: m.Name, Version: m.Version, Digest: ref.Digest, Class: string(m.Class), Summary: m.Summary, Params: params}, nil
}

func (s *Server) nodeDisconnect(r *http.Request) (any, error) {
	n, err := s.nodeByRef(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return nil, err
	}
	res, err := s.store.NodeDisconnect(r.Context(), store.NodeEndParams{ID: n.ID, By: tokenFrom(r.Context()).Name, Now: s.now()})
	if err != nil {
		return nil, err
	}
	s.log.Info("node disconnected", "node", n.ID, "name", n.Name, "by", tokenFrom(r.Context()).Name)
	s.jobsEnded(res.Cancelled, res.Lost)
	named := func(j store.Job) api.Job { return jobToAPI(j, n.Name) }
	return api.Disconnected{Node: nodeToAPI(res.Node), Cancelled: each(res.Cancelled, named), Lost: each(res.Lost, named)}, nil
}

// jobCreate checks the job on the plane for a good error (the node checks again and is the authority):
// the node must report the word, the token's role must cover the word's class as the signed manifest
// states it, and the params must satisfy the word's schema.
func (s *Server) jobCreate(r *http.Request) (any, error) {
	ctx := r.Context()
	var req api.JobRequest
	if err := readJSON(r, 256<<10, &req); err != nil {
		return nil, err
	}
	if len(req.Params) == 0 {
		req.Params = json.RawMessage(`{}`)
	}
	node, err := s.nodeByRef(ctx, req.Node)
	if err != nil {
		return nil, err
	}
	ref, ok := node.Word(req.Word)
	if !ok && node.Update.NeedsNewerAgent != "" {
		return nil, errcode.New(errcode.JobNeedsNewerAgent,
			"node %s does not hold the word %q yet: its agent %s is below the release's floor %s and is updating itself first; queue the job again once it reports the word",
			node.Name, req.Word, node.AgentVersion, node.Update.NeedsNewerAgent).
			With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, req.Word).With(errcode.DetailVersion, node.Update.NeedsNewerAgent)
	}
	if !ok {
		return nil, errcode.New(errcode.JobWordUnavailable,
			"node %s does not report the word %q: publish a release that pins it (lexicon releases publish) and wait for the node to load it, or choose a node that reports it (lexicon nodes show %s)",
			node.Name, req.Word, node.Name).With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, req.Word)
	}
	// The manifest is the one its own row pins for this word and module: another word on the same
	// module has its own class and schema, and must never lend them.
	m, known, err := s.manifests.word(ctx, req.Word, ref.Digest)
	if err != nil {
		return nil, err
	}
	if !known {
		return nil, errcode.New(errcode.JobWordUnavailable,
			"node %s reports %s with digest %s, which no release on this plane pins; publish its release or wait for the node to update",
			node.Name, req.Word, ref.Digest).With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, req.Word)
	}
	role := api.RoleOperator
	if m.Class == manifest.ClassDestructive {
		role = api.RoleAdmin
	}
	if err := need(ctx, role); err != nil {
		return nil, err
	}
	if err := m.CheckParams(req.Params); err != nil {
		return nil, err
	}
	var budget time.Duration
	if ms := m.Limits.WallTimeMS; ms > 0 {
		budget = time.Duration(ms)*time.Millisecond + time.Minute // fetching and reporting take time too
	}
	var request string
	leaseTTL := budget + 10*time.Minute // queued, then running for at most its budget
	if budget == 0 {
		leaseTTL = store.DefaultJobBudget + 10*time.Minute
	}
	if req.Exclusive {
		// The request holds the node until its job exists, then hands the lease to the job.
		b := make([]byte, 9)
		_, _ = rand.Read(b)
		request = "request:" + base64.RawURLEncoding.EncodeToString(b)
		if _, err := rollouts.AcquireChange(ctx, s.store, node.ID, request, "exclusive job "+req.Word+" by "+tokenFrom(ctx).Name, leaseTTL, s.now()); err != nil {
			return nil, err
		}
	}
	job, err := s.store.JobCreate(ctx, store.JobCreateParams{
		NodeID: node.ID, Word: req.Word, WordDigest: ref.Digest, Class: string(m.Class), Params: req.Params,
		Budget: budget, CreatedBy: tokenFrom(ctx).Name, Now: s.now(),
	})
	if err != nil {
		if request != "" {
			_ = s.store.LeaseRelease(ctx, store.LeaseReleaseParams{Subject: node.ID, Name: store.LeaseChange, Holder: request})
		}
		return nil, err
	}
	if request != "" {
		if _, err := s.store.LeaseAcquire(ctx, store.LeaseAcquireParams{Subject: node.ID, Name: store.LeaseChange, Holder: rollouts.JobHolder(job.ID),
			Purpose: "exclusive job " + job.ID + " by " + job.CreatedBy, TTL: leaseTTL, Now: s.now(), From: request}); err != nil {
			return nil, err
		}
	}
	s.log.Info("job queued", "job", job.ID, "node", node.ID, "word", job.Word, "by", job.CreatedBy)
	s.metrics.JobQueued(job.Word)
	return jobToAPI(job, node.Name), nil
}

func (s *Server) jobList(r *http.Request) (any, error) {
	q, err := api.ParseJobsListQuery(r.URL.Query())
	if err != nil {
		return nil, err
	}
	var nodeID string
	if q.Node != "" {
		n, err := s.nodeByRef(r.Context(), q.Node)
		if err != nil {
			return nil, err
		}
		nodeID = n.ID
	}
	res, err := s.store.JobList(r.Context(), store.JobListParams{NodeID: nodeID, State: store.JobState(q.State), Limit: q.Limit, Cursor: q.Cursor})
	if err != nil {
		return nil, err
	}
	names, err := s.nodeNames(r.Context(), res.Jobs)
	if err != nil {
		return nil, err
	}
	return api.JobList{Jobs: each(res.Jobs, func(j store.Job) api.Job { return jobToAPI(j, names[j.NodeID]) }), NextCursor: res.NextCursor}, nil
}

// nodeNames looks up the names of the jobs' nodes, each once, so that a list shows people names
// rather than ids alone. A node the store no longer finds keeps its id only.
func (s *Server) nodeNames(ctx context.Context, jobs []store.Job) (map[string]string, error) {
	names := map[string]string{}
	for _, j := range jobs {
		if _, done := names[j.NodeID]; done {
			continue
		}
		n, err := s.store.NodeGet(ctx, store.NodeGetParams{ID: j.NodeID})
		switch {
		case errcode.Has(err, errcode.NodeNotFound):
			names[j.NodeID] = ""
		case err != nil:
			return nil, err
		default:
			names[j.NodeID] = n.Name
		}
	}
	return names, nil
}

// jobAnswer is a job with its node's name.
func (s *Server) jobAnswer(ctx context.Context, j store.Job, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	names, err := s.nodeNames(ctx, []store.Job{j})
	if err != nil {
		return nil, err
	}
	return jobToAPI(j, names[j.NodeID]), nil
}

func (s *Server) jobShow(r *http.Request) (any, error) {
	j, err := s.store.JobGet(r.Context(), store.JobGetParams{ID: chi.URLParam(r, "id")})
	return s.jobAnswer(r.Context(), j, err)
}

func (s *Server) jobCancel(r *http.Request) (any, error) {
	j, err := s.store.JobCancel(r.Context(), store.JobCancelParams{ID: chi.URLParam(r, "id"), By: tokenFrom(r.Context()).Name, Now: s.now()})
	if err == nil {
		s.metrics.JobEnded(j.Word, string(j.State))
	}
	return s.jobAnswer(r.Context(), j, err)
}

func (s *Server) jobMarkFailed(r *http.Request) (any, error) {
	body, err := readBody(r, 4<<10)
	if err != nil {
		return nil, err
	}
	req := api.MarkFailedRequest{Message: "marked failed by an operator"}
	if len(body) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			return nil, err
		}
	}
	j, err := s.store.JobMarkFailed(r.Context(), store.JobMarkFailedParams{ID: chi.URLParam(r, "id"), By: tokenFrom(r.Context()).Name, Message: req.Message, Now: s.now()})
	if err == nil {
		s.metrics.JobEnded(j.Word, string(j.State))
	}
	return s.jobAnswer(r.Context(), j, err)
}

// jobsEnded counts the jobs a disconnect cancelled or lost.
func (s *Server) jobsEnded(lists ...[]store.Job) {
	for _, list := range lists {
		for _, j := range list {
			s.metrics.JobEnded(j.Word, string(j.State))
		}
	}
}

// fleetShow counts the nodes in the store: one pass, however many there are.
func (s *Server) fleetShow(r *http.Request) (any, error) {
	c, err := s.store.NodeCount(r.Context(), store.NodeCountParams{SilentBefore: s.now().Add(-store.DefaultSilentAfter)})
	if err != nil {
		return nil, err
	}
	return api.Fleet{Total: c.Total, Active: c.Active, Disconnected: c.Disconnected, Left: c.Left, Online: c.Online, Silent: c.Silent,
		SilentAfterSeconds: int64(store.DefaultSilentAfter / time.Second), Untrusted: c.Untrusted, BelowFloor: c.BelowFloor,
		Versions: each(c.Versions, func(v store.VersionCount) api.VersionCount {
			return api.VersionCount{Version: v.Version, Nodes: v.Nodes}
		})}, nil
}
