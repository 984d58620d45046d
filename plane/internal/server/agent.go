package server

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
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
		s.signatureFailed(err)
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
	p := store.JoinCreateParams{
		Name: req.Name, Key: key.String(), Fingerprint: key.Fingerprint(), Addresses: req.Addresses,
		SourceAddress: sourceAddr(r), Now: now,
		MaxPending: s.cfg.MaxPendingJoins, MaxPendingPerSource: s.cfg.MaxPendingJoinsPerSource,
	}
	var res store.JoinCreateResult
	if req.Token != "" {
		// A provisioned machine: the token binds the join to its provisioning, whose engine asks the
		// provider before approving. The token is never logged.
		res, err = provision.Join(r.Context(), s.store, req.Token, p)
		if err == nil {
			s.provisionsChanged()
		}
	} else {
		res, err = s.store.JoinCreate(r.Context(), p)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("join requested", "join", res.Join.ID, "name", res.Join.Name, "fingerprint", res.Join.Fingerprint,
		"source", res.Join.SourceAddress, "renewed", res.Renewed, "provisioning", res.Join.ProvisioningID)
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

// seenEvery is how stale a node's last-seen time may grow before a claim whose report the plane
// already holds writes it again: a claim that changes nothing the plane keeps costs no write, and
// last_seen_at stays well inside the silence the incident detector waits for (10 minutes by default).
const seenEvery = time.Minute

// claim records what the node reports (its cases included) and holds the request until a job is queued
// for it or the wait runs out. A node that claims while idle has no job running: one the plane thinks is running is lost.
func (s *Server) claim(w http.ResponseWriter, r *http.Request, node store.Node, body []byte) {
	s.metrics.ClaimStarted()
	defer s.metrics.ClaimEnded()
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
	ctx := r.Context()
	resp, err := s.takeReport(ctx, node, &req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !req.Idle {
		writeJSON(w, http.StatusOK, resp) // a busy node reports; work waits until it is idle
		return
	}
	s.metrics.LongPollStarted()
	defer s.metrics.LongPollEnded()
	wake, stop := s.store.Notifier().Subscribe(node.ID)
	defer stop()
	timer := time.NewTimer(s.holdFor(ctx))
	defer timer.Stop()
	// The first look loses the job the plane thinks is running, in the claim's own transaction; the
	// looks after a wake-up only claim, so a job handed out meanwhile (by another replica) stays.
	first := true
	for {
		var job *store.Job
		var err error
		if first {
			var res store.JobClaimIdleResult
			res, err = s.store.JobClaimIdle(ctx, store.JobClaimParams{NodeID: node.ID, Now: s.now()})
			for _, j := range res.Lost {
				s.log.Warn("job lost: its node claimed while idle", "job", j.ID, "node", node.ID, "word", j.Word)
				s.metrics.JobEnded(j.Word, string(j.State))
			}
			job, first = res.Job, false
		} else {
			job, err = s.store.JobClaim(ctx, store.JobClaimParams{NodeID: node.ID, Now: s.now()})
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if job != nil {
			resp.Job = s.handOut(node, job)
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

type connKey struct{}

// ConnContext marks each connection the plane serves, so that the first long poll on it is told
// apart (holdFor); it is http.Server.ConnContext.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, new(atomic.Bool))
}

// holdFor is how long a long poll is held when no job comes. Each is held for a random part of the
// last fifth of the wait, so that agents do not stay in step. The first one on a connection is held
// anywhere from a tenth of the wait to all of it: agents that connected together (after a plane
// restart, or a load balancer's) would otherwise come back together, 10,000 renewals in the last
// fifth of one wait, for several waits; the jobs queued during such a wave waited behind it (the
// throughput section of the RATIONALE).
func (s *Server) holdFor(ctx context.Context) time.Duration {
	w := s.cfg.ClaimWait
	if first, ok := ctx.Value(connKey{}).(*atomic.Bool); ok && first.CompareAndSwap(false, true) {
		return w/10 + rand.N(w-w/10+1)
	}
	return w - rand.N(w/5+1)
}

// handOut is a claimed job as the node is told it.
func (s *Server) handOut(node store.Node, job *store.Job) *channel.Job {
	s.log.Info("job handed out", "job", job.ID, "node", node.ID, "word", job.Word)
	s.metrics.JobDispatched(job.CreatedAt, s.now())
	return &channel.Job{
		ID: job.ID, Word: job.Word, Version: job.WordVersion, Digest: job.WordDigest, Class: job.Class,
		Params: job.Params, Deadline: job.DeadlineAt,
	}
}

// takeReport records what a claim says of the node and takes in its cases, and starts the answer. The
// report is written only when it changed: a claim naming the digest of the report the plane holds (or
// leaving the report out) writes at most when the node was last seen and whether it is idle, and
// that only when it changed or grew stale. A brief claim naming a report the plane does not hold is
// answered with SendReport.
func (s *Server) takeReport(ctx context.Context, node store.Node, req *channel.ClaimRequest) (channel.ClaimResponse, error) {
	resp := channel.ClaimResponse{Statement: s.targetStatement(ctx, node)}
	held := node.ReportDigest
	known := req.ReportDigest != "" && req.ReportDigest == held
	switch {
	case !req.ReportOmitted && !known:
		if err := s.recordReport(ctx, node, req); err != nil {
			return resp, err
		}
		held = req.ReportDigest
	case node.Idle != req.Idle || s.now().Sub(node.LastSeenAt) >= seenEvery:
		if err := s.store.NodeSeen(ctx, store.NodeSeenParams{ID: node.ID, Now: s.now(), Idle: req.Idle}); err != nil {
			return resp, err
		}
	}
	resp.ReportDigest = held
	resp.SendReport = req.ReportOmitted && !known
	// Cases are taken in before the long poll, so that an incident opens while the claim waits.
	return resp, s.intakeCases(ctx, node, req.Cases)
}

// recordReport writes a claim's full report.
func (s *Server) recordReport(ctx context.Context, node store.Node, req *channel.ClaimRequest) error {
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
	cps := s.checkpointsFromClaim(node, req.Checkpoints)
	digest, _ := capText(req.ReportDigest, store.MaxRefLen)
	claimCap := int64(min(max(req.ClaimSize, channel.DefaultBodyCap), channel.MaxClaimCap))
	upd := updateFromClaim(req.Update)
	if _, err := s.store.NodeReport(ctx, store.NodeReportParams{
		ID: node.ID, Now: s.now(), AgentVersion: req.Version, StatementSequence: int64(req.Statement.Sequence),
		StatementDigest: req.Statement.Digest, Vocabulary: vocab, Recipes: recipes, Idle: req.Idle, ClaimSizeCap: claimCap,
		Untrusted: untrusted, ReportDigest: digest, Update: upd, Checkpoints: cps,
	}); err != nil {
		return err
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
	return nil
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
	ctx := r.Context()
	finish := store.JobFinishParams{
		ID: req.JobID, NodeID: node.ID, Outcome: outcome, Code: code, Message: message, Output: output,
		Transcript: transcript, Audit: auditJSON, Duration: time.Duration(req.DurationMS) * time.Millisecond, Now: s.now(),
	}
	if req.Claim == nil {
		job, err := s.store.JobFinish(ctx, finish)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.log.Info("job finished", "job", job.ID, "node", node.ID, "word", job.Word, "state", job.State, "code", code)
		writeJSON(w, http.StatusOK, channel.ResultResponse{JobID: job.ID, State: job.State})
		return
	}
	// Finish-and-claim: the claim's report first, as a claim takes it; then the result and the next
	// job in one transaction. Never held: with no job the node long-polls with a claim of its own.
	claim, err := s.takeReport(ctx, node, req.Claim)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var res store.JobFinishClaimResult
	if req.Claim.Idle {
		res, err = s.store.JobFinishClaim(ctx, finish)
	} else {
		res.Job, err = s.store.JobFinish(ctx, finish)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("job finished", "job", res.Job.ID, "node", node.ID, "word", res.Job.Word, "state", res.Job.State, "code", code)
	s.metrics.JobEnded(res.Job.Word, string(res.Job.State))
	if res.Next != nil {
		claim.Job = s.handOut(node, res.Next)
	}
	writeJSON(w, http.StatusOK, channel.ResultResponse{JobID: res.Job.ID, State: res.Job.State, Claim: &claim})
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

// artifact serves the node's target statement, a stored artifact by digest, or the target release's
// agent binary for a platform. It never takes a path.
func (s *Server) artifact(w http.ResponseWriter, r *http.Request, node store.Node, _ []byte) {
	q := r.URL.Query()
	ctx := r.Context()
	var data []byte
	switch {
	case q.Has("log_proof"):
		s.logProof(w, r, q)
		return
	case len(q) != 1:
		s.writeError(w, r, errcode.New(errcode.RequestMalformed, "ask for exactly one of statement=current, sha256=<hex> or agent=<os>-<arch>"))
		return
	case q.Get("statement") == "current":
		rel, err := s.targetRelease(ctx, node)
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
		rel, err := s.targetRelease(ctx, node)
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

// targetStatement is the statement a node is served: its target release's, never simply the newest
// (publishing offers a release; a rollout moves a node's target to it). Releases never change, so
// each one's reference is read once; a claim per node per poll must not read bundles.
func (s *Server) targetStatement(ctx context.Context, node store.Node) channel.StatementRef {
	seq := node.TargetSequence
	if seq <= 0 {
		return channel.StatementRef{}
	}
	s.mu.Lock()
	ref, ok := s.statRefs[seq]
	s.mu.Unlock()
	if ok {
		return ref
	}
	rel, err := s.store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: seq})
	if err != nil {
		return channel.StatementRef{}
	}
	ref = channel.StatementRef{Sequence: uint64(rel.Sequence), Digest: rel.StatementDigest}
	s.mu.Lock()
	s.statRefs[seq] = ref
	s.mu.Unlock()
	return ref
}

// targetRelease is the release a node is served, with its bundle.
func (s *Server) targetRelease(ctx context.Context, node store.Node) (store.Release, error) {
	if node.TargetSequence <= 0 {
		return store.Release{}, errcode.New(errcode.ReleaseNotFound, "no release is published")
	}
	return s.store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: node.TargetSequence})
}

func notFound(r *http.Request) error {
	return errcode.New(errcode.RouteNotFound, "no route %s %s", r.Method, r.URL.Path)
}

// signatureFailed counts a refused signature by its code; a store that could not be asked is the
// store's failure, not the signature's, and is counted there.
func (s *Server) signatureFailed(err error) {
	if code := errcode.Code(err); !strings.HasPrefix(code, "store.") {
		s.metrics.SignatureFailed(code)
	}
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
