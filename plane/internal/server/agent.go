package server

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/httpsig"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// sourceAddr is the address a request came from, for per-address limits and the join record.
func sourceAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// verify checks a signed request with keys looked up by lookup. A request that proves no node is
// charged to its source address, never to a node, so a bad neighbour cannot exhaust a node's budget.
func (s *Server) verify(r *http.Request, body []byte, lookup httpsig.KeyLookup) (httpsig.Proof, error) {
	v := &httpsig.Verifier{Base: s.cfg.Base, Keys: lookup, Nonces: s.nonces}
	proof, err := v.Verify(r, body, s.now())
	if err != nil {
		if lerr := s.addrLimit.allow(sourceAddr(r), s.now()); lerr != nil {
			return proof, lerr
		}
		return proof, err
	}
	return proof, nil
}

// signed wraps a handler for a node: the body is read under limit, the signature must prove an active
// node, and the node's own rate limit applies. The handler gets the node the signature proved; it
// never trusts an id in the body.
func (s *Server) signed(limit int64, h func(http.ResponseWriter, *http.Request, store.Node, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r, limit)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		var node store.Node
		_, err = s.verify(r, body, func(ctx context.Context, keyID string) (keys.NodePublic, bool, error) {
			n, err := s.store.NodeGetByKey(ctx, store.NodeGetByKeyParams{Fingerprint: keyID})
			if errcode.Has(err, errcode.NodeNotFound) {
				return keys.NodePublic{}, false, nil
			}
			if err != nil {
				return keys.NodePublic{}, false, err
			}
			k, err := keys.ParseNodePublic(n.Key)
			node = n
			return k, err == nil, err
		})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.nodeLimit.allow(node.ID, s.now()); err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r, node, body)
	}
}

// join records a pending join. It is unauthenticated and grants nothing: the key is only paired once an
// admin has compared its fingerprint.
func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	if err := s.addrLimit.allow(sourceAddr(r), now); err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readBody(r, 8<<10)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req channel.JoinRequest
	if err := decodeLenient(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	key, err := keys.ParseNodePublic(req.Key)
	if err != nil {
		s.writeError(w, r, errcode.Wrap(err, errcode.RequestMalformed, "key is not a node key").With(errcode.DetailField, "key"))
		return
	}
	if !store.ValidNodeName(req.Name) {
		s.writeError(w, r, errcode.New(errcode.RequestMalformed, "name %q must be a host name of at most 63 characters", req.Name).With(errcode.DetailField, "name"))
		return
	}
	if len(req.Addresses) > 16 {
		s.writeError(w, r, errcode.New(errcode.RequestMalformed, "at most 16 addresses").With(errcode.DetailField, "addresses"))
		return
	}
	for _, a := range req.Addresses {
		if net.ParseIP(a) == nil {
			s.writeError(w, r, errcode.New(errcode.RequestMalformed, "address %q is not an IP address", a).With(errcode.DetailField, "addresses"))
			return
		}
	}
	res, err := s.store.JoinCreate(r.Context(), store.JoinCreateParams{
		Name: req.Name, Key: key.String(), Fingerprint: key.Fingerprint(), Addresses: req.Addresses,
		SourceAddress: sourceAddr(r), Now: now,
		MaxPending: s.cfg.MaxPendingJoins, MaxPendingPerSource: s.cfg.MaxPendingJoinsPerSource,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("join requested", "join", res.Join.ID, "name", res.Join.Name, "fingerprint", res.Join.Fingerprint,
		"source", res.Join.SourceAddress, "renewed", res.Renewed)
	writeJSON(w, http.StatusAccepted, channel.JoinResponse{
		JoinID: res.Join.ID, Fingerprint: res.Join.Fingerprint, Status: string(res.Join.Status), ExpiresAt: res.Join.ExpiresAt,
	})
}

// joinStatus answers the key that asked to join, signed by that key; a pending join is renewed by
// asking, so an agent that waits keeps its request alive and an abandoned one expires.
func (s *Server) joinStatus(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, channel.DefaultBodyCap)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req channel.JoinStatusRequest
	if err := decodeLenient(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	var join store.Join
	_, err = s.verify(r, body, func(ctx context.Context, keyID string) (keys.NodePublic, bool, error) {
		j, err := s.store.JoinGet(ctx, store.JoinGetParams{ID: req.JoinID, Now: s.now()})
		if err != nil || j.Fingerprint != keyID {
			return keys.NodePublic{}, false, nil
		}
		k, err := keys.ParseNodePublic(j.Key)
		join = j
		return k, err == nil, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The key proved is the join's, not yet a node's: it gets a budget of its own, as a node would.
	if err := s.nodeLimit.allow("join:"+join.ID, s.now()); err != nil {
		s.writeError(w, r, err)
		return
	}
	if join.Status == store.JoinPending {
		if renewed, err := s.store.JoinRenew(r.Context(), store.JoinRenewParams{ID: join.ID, Now: s.now()}); err == nil {
			join = renewed
		}
	}
	writeJSON(w, http.StatusOK, channel.JoinStatusResponse{Status: string(join.Status), NodeID: join.NodeID, ExpiresAt: join.ExpiresAt})
}

// claim records what the node reports (its cases included) and holds the request until a job is queued
// for it or the wait runs out. A node that claims while idle has no job running: one the plane thinks is running is lost.
func (s *Server) claim(w http.ResponseWriter, r *http.Request, node store.Node, body []byte) {
	capacity := node.ClaimSizeCap
	if capacity < channel.DefaultBodyCap {
		capacity = channel.DefaultBodyCap
	}
	if int64(len(body)) > capacity {
		s.writeError(w, r, errcode.New(errcode.RequestTooLarge, "claim is over this node's %d-byte cap; report claim_size", capacity).With(errcode.DetailCap, capacity))
		return
	}
	var req channel.ClaimRequest
	if err := decodeLenient(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	vocab := make([]store.WordRef, len(req.Vocabulary))
	for i, w := range req.Vocabulary {
		vocab[i] = store.WordRef{Name: w.Name, Version: w.Version, Digest: w.Digest, Class: w.Class}
	}
	var recipes []byte
	if req.Recipes != nil {
		list, cut := capRecipes(req.Recipes)
		if len(cut) > 0 {
			s.log.Warn("recipe report capped", "code", errcode.CaseCapped, "node", node.ID, "fields", []string(cut))
		}
		recipes, _ = json.Marshal(list)
	}
	untrusted, _ := capText(req.Untrusted, channel.MaxCaseText)
	claimCap := int64(min(max(req.ClaimSize, channel.DefaultBodyCap), channel.MaxClaimCap))
	upd := updateFromClaim(req.Update)
	ctx := r.Context()
	if _, err := s.store.NodeReport(ctx, store.NodeReportParams{
		ID: node.ID, Now: s.now(), AgentVersion: req.Version, StatementSequence: int64(req.Statement.Sequence),
		StatementDigest: req.Statement.Digest, Vocabulary: vocab, Recipes: recipes, Idle: req.Idle, ClaimSizeCap: claimCap,
		Untrusted: untrusted, Update: upd,
	}); err != nil {
		s.writeError(w, r, err)
		return
	}
	if seq := int64(req.Statement.Sequence); seq != node.StatementSequence {
		// Rare (a node takes each statement once) and what an operator follows a release by.
		s.log.Info("node took a statement", "node", node.ID, "sequence", seq, "words", len(vocab))
	}
	if untrusted != "" {
		s.log.Warn("node cannot verify the plane's statement", "node", node.ID, "reason", untrusted)
	}
	if upd.State != node.Update.State || upd.Offered != node.Update.Offered || upd.NeedsNewerAgent != node.Update.NeedsNewerAgent ||
		req.Version != node.AgentVersion {
		// Rare (a few times an update) and what an operator, and the update tests, follow an update by.
		s.log.Info("node update state", "node", node.ID, "version", req.Version, "state", upd.State, "offered", upd.Offered,
			"needs_newer_agent", upd.NeedsNewerAgent)
	}
	// Cases are taken in before the long poll, so that an incident opens while the claim waits.
	if err := s.intakeCases(ctx, node, req.Cases); err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := channel.ClaimResponse{Statement: s.currentStatement(ctx)}
	if !req.Idle {
		writeJSON(w, http.StatusOK, resp) // a busy node reports; work waits until it is idle
		return
	}
	lost, err := s.store.JobLoseRunning(ctx, store.JobLoseRunningParams{NodeID: node.ID, Now: s.now()})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for _, j := range lost {
		s.log.Warn("job lost: its node claimed while idle", "job", j.ID, "node", node.ID, "word", j.Word)
	}
	wake, stop := s.store.Notifier().Subscribe(node.ID)
	defer stop()
	// Held for a random part of the last fifth of the wait: agents that connected together (after a
	// plane restart, say) would otherwise come back together every wait, for good, and each wave
	// delays the jobs dispatched during it.
	timer := time.NewTimer(s.cfg.ClaimWait - rand.N(s.cfg.ClaimWait/5+1))
	defer timer.Stop()
	for {
		job, err := s.store.JobClaim(ctx, store.JobClaimParams{NodeID: node.ID, Now: s.now()})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if job != nil {
			resp.Job = &channel.Job{
				ID: job.ID, Word: job.Word, Version: job.WordVersion, Digest: job.WordDigest, Class: job.Class,
				Params: job.Params, Deadline: job.DeadlineAt,
			}
			s.log.Info("job handed out", "job", job.ID, "node", node.ID, "word", job.Word)
			writeJSON(w, http.StatusOK, resp)
			return
		}
		select {
		case <-wake:
		case <-timer.C:
			writeJSON(w, http.StatusOK, resp)
			return
		case <-ctx.Done():
			return
		}
	}
}

// validUTF8 makes raw JSON from a node storable: invalid UTF-8 can only sit inside its strings (and
// json.Marshal keeps a RawMessage's bytes), so replacing it keeps the document valid.
func validUTF8(doc []byte) []byte {
	if len(doc) == 0 {
		return doc
	}
	return bytes.ToValidUTF8(doc, []byte("\uFFFD"))
}

// result records how a job ended, bounded on intake: an output over its cap fails the job rather than
// being stored, a long transcript is cut, and the audit list is capped.
func (s *Server) result(w http.ResponseWriter, r *http.Request, node store.Node, body []byte) {
	var req channel.ResultRequest
	if err := decodeLenient(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	outcome := store.JobState(req.Outcome)
	switch req.Outcome {
	case channel.OutcomeCompleted, channel.OutcomeFailed, channel.OutcomeRefused:
	default:
		s.writeError(w, r, errcode.New(errcode.RequestMalformed, "outcome must be completed, failed or refused, not %q", req.Outcome).With(errcode.DetailField, "outcome"))
		return
	}
	// Text is cut on a character boundary and made valid UTF-8 without NUL, so that no database can
	// refuse it: a result the store refused would leave the job running, to be counted lost.
	code, _ := capText(req.Code, store.MaxRefLen)
	message, _ := capText(req.Message, store.MaxMessageLen)
	transcript, _ := capText(req.Transcript, channel.TranscriptCap)
	output := []byte(req.Output)
	if len(output) > channel.OutputCap || (len(output) > 0 && !json.Valid(output)) {
		outcome, code, output = store.JobState(channel.OutcomeFailed), errcode.RequestTooLarge, nil
		message = "the node's output was over the plane's cap or not JSON, and was dropped"
	}
	audit := req.Capabilities
	if len(audit) > channel.AuditCap {
		audit = audit[:channel.AuditCap]
	}
	var auditJSON json.RawMessage
	if len(audit) > 0 {
		auditJSON, _ = json.Marshal(audit)
	}
	output, auditJSON = validUTF8(output), validUTF8(auditJSON)
	job, err := s.store.JobFinish(r.Context(), store.JobFinishParams{
		ID: req.JobID, NodeID: node.ID, Outcome: outcome, Code: code, Message: message, Output: output,
		Transcript: transcript, Audit: auditJSON, Duration: time.Duration(req.DurationMS) * time.Millisecond, Now: s.now(),
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("job finished", "job", job.ID, "node", node.ID, "word", job.Word, "state", job.State, "code", code)
	writeJSON(w, http.StatusOK, channel.ResultResponse{JobID: job.ID, State: job.State})
}

func (s *Server) jobStatus(w http.ResponseWriter, r *http.Request, node store.Node, body []byte) {
	var req channel.JobStatusRequest
	if err := decodeLenient(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	job, err := s.store.JobGet(r.Context(), store.JobGetParams{ID: req.JobID})
	if err == nil && job.NodeID != node.ID {
		err = errcode.New(errcode.JobNotFound, "no job %s for this node", req.JobID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, channel.JobStatusResponse{JobID: job.ID, State: job.State})
}

func (s *Server) leave(w http.ResponseWriter, r *http.Request, node store.Node, body []byte) {
	var req channel.LeaveRequest
	if err := decodeLenient(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.store.NodeLeave(r.Context(), store.NodeEndParams{ID: node.ID, Now: s.now()})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("node left", "node", node.ID, "name", node.Name, "reason", req.Reason, "cancelled", len(res.Cancelled), "lost", len(res.Lost))
	writeJSON(w, http.StatusOK, channel.LeaveResponse{NodeID: node.ID, State: string(res.Node.State)})
}

// artifact serves the current statement, a stored artifact by digest, or the current release's agent
// binary for a platform. It never takes a path.
func (s *Server) artifact(w http.ResponseWriter, r *http.Request, _ store.Node, _ []byte) {
	q := r.URL.Query()
	ctx := r.Context()
	var data []byte
	switch {
	case len(q) != 1:
		s.writeError(w, r, errcode.New(errcode.RequestMalformed, "ask for exactly one of statement=current, sha256=<hex> or agent=<os>-<arch>"))
		return
	case q.Get("statement") == "current":
		rel, err := s.store.ReleaseCurrent(ctx)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		data = rel.Bundle
	case q.Has("sha256"):
		d := q.Get("sha256")
		if !cas.ValidDigest(d) {
			s.writeError(w, r, errcode.New(errcode.RequestMalformed, "sha256 must be 64 lowercase hex digits"))
			return
		}
		a, err := s.store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: d})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		data = a.Data
	case q.Has("agent"):
		rel, err := s.store.ReleaseCurrent(ctx)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		digest := ""
		for _, a := range rel.Artifacts {
			if a.Name == "agent/"+q.Get("agent") {
				digest = a.Digest
			}
		}
		if digest == "" {
			s.writeError(w, r, errcode.New(errcode.ArtifactNotPinned, "the current release pins no agent for %q; the plane serves an agent only as a pinned artifact", q.Get("agent")).
				With(errcode.DetailSubject, "agent/"+q.Get("agent")))
			return
		}
		a, err := s.store.ArtifactGet(ctx, store.ArtifactGetParams{Digest: digest})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		data = a.Data
	default:
		s.writeError(w, r, errcode.New(errcode.RequestMalformed, "ask for statement=current, sha256=<hex> or agent=<os>-<arch>"))
		return
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// currentStatement is the newest release as claims report it, cached for a few seconds: a claim per
// node per poll must not read the bundle from the database.
func (s *Server) currentStatement(ctx context.Context) channel.StatementRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now().Sub(s.fetched) < 5*time.Second {
		return s.current
	}
	list, err := s.store.ReleaseList(ctx, store.ReleaseListParams{Limit: 1})
	if err == nil {
		s.fetched = s.now()
		s.current = channel.StatementRef{}
		if len(list) > 0 {
			s.current = channel.StatementRef{Sequence: uint64(list[0].Sequence), Digest: list[0].StatementDigest}
		}
	}
	return s.current
}

func (s *Server) forgetCurrent() {
	s.mu.Lock()
	s.fetched = time.Time{}
	s.mu.Unlock()
}

func notFound(r *http.Request) error {
	return errcode.New(errcode.RouteNotFound, "no route %s %s", r.Method, r.URL.Path)
}

// updateFromClaim takes a claim's update report into the store's form, capped and cut to valid text;
// a state outside the closed set is recorded as none with the node's word for it as the reason, so
// that a newer agent with a new state is still shown rather than refused.
func updateFromClaim(u *channel.UpdateReport) store.NodeUpdate {
	if u == nil {
		return store.NodeUpdate{}
	}
	out := store.NodeUpdate{State: u.State}
	out.Offered, _ = capText(u.Offered, store.MaxRefLen)
	out.NeedsNewerAgent, _ = capText(u.NeedsNewerAgent, store.MaxRefLen)
	out.Reason, _ = capText(u.Reason, store.MaxMessageLen)
	if !slices.Contains(store.UpdateStates, u.State) {
		state, _ := capText(u.State, 64)
		out.State, out.Reason = channel.UpdateNone, "unknown update state "+state+": "+out.Reason
		out.Reason, _ = capText(out.Reason, store.MaxMessageLen)
	}
	hist := u.History
	if len(hist) > store.MaxUpdateHistory {
		hist = hist[len(hist)-store.MaxUpdateHistory:]
	}
	for _, e := range hist {
		ev := store.NodeUpdateEvent{At: e.At}
		ev.Event, _ = capText(e.Event, store.MaxRefLen)
		ev.From, _ = capText(e.From, store.MaxRefLen)
		ev.To, _ = capText(e.To, store.MaxRefLen)
		ev.Detail, _ = capText(e.Detail, store.MaxMessageLen)
		out.History = append(out.History, ev)
	}
	return out
}
