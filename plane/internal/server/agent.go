package server

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/joins"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
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
	return s.verifyNonces(r, body, lookup, s.cfg.Nodes)
}

// verifyNonces is verify with the nonces recorded by nonces.
func (s *Server) verifyNonces(r *http.Request, body []byte, lookup httpsig.KeyLookup, nonces httpsig.NonceStore) (httpsig.Proof, error) {
	v := &httpsig.Verifier{Base: s.cfg.Base, Keys: lookup, Nonces: nonces}
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
func (s *Server) signed(limit int64, h func(http.ResponseWriter, *http.Request, nodes.Proven, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if node, body, ok := s.prove(w, r, limit, s.cfg.Nodes); ok {
			h(w, r, node, body)
		}
	}
}

// signedResult is signed for the result route, whose nonce the handler records (jobs.Room.Result,
// in the result's own transaction when it can: one durable commit per job round trip, not two). The
// verifier's nonce store only keeps the nonce for it; everything else is checked as for every route.
func (s *Server) signedResult(limit int64, h func(http.ResponseWriter, *http.Request, nodes.Proven, []byte, jobs.Nonce)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var kept keptNonce
		if node, body, ok := s.prove(w, r, limit, &kept); ok {
			h(w, r, node, body, jobs.Nonce{KeyID: kept.keyID, Nonce: kept.nonce, ExpiresAt: kept.expires, Now: s.now()})
		}
	}
}

// keptNonce is a NonceStore that records nothing: it keeps the one nonce of a verified request for
// the handler that must record it (signedResult).
type keptNonce struct {
	keyID, nonce string
	expires      time.Time
}

func (k *keptNonce) NonceUse(_ context.Context, keyID, nonce string, expires time.Time) (bool, error) {
	k.keyID, k.nonce, k.expires = keyID, nonce, expires
	return true, nil
}

// prove reads the body under limit and checks that its signature proves an active node, and the
// node's own rate limit; on a refusal it has written the error and ok is false.
func (s *Server) prove(w http.ResponseWriter, r *http.Request, limit int64, nonces httpsig.NonceStore) (node nodes.Proven, body []byte, ok bool) {
	body, err := readBody(r, limit)
	if err != nil {
		s.writeError(w, r, err)
		return node, nil, false
	}
	_, err = s.verifyNonces(r, body, func(ctx context.Context, keyID string) (keys.NodePublic, bool, error) {
		k, n, ok, err := s.cfg.Nodes.Key(ctx, keyID)
		node = n
		return k, ok, err
	}, nonces)
	if err != nil {
		s.writeError(w, r, err)
		return node, nil, false
	}
	if err := s.nodeLimit.allow(node.ID(), s.now()); err != nil {
		s.writeError(w, r, err)
		return node, nil, false
	}
	return node, body, true
}

// join records a pending join. It is unauthenticated and grants nothing, so it is charged to its
// source address before its body is read.
func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	if err := s.addrLimit.allow(sourceAddr(r), s.now()); err != nil {
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
	resp, err := s.cfg.Joins.Request(r.Context(), req, sourceAddr(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, resp)
}

// joinStatus answers the key that asked to join, signed by that key.
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
	var join joins.Pending
	_, err = s.verify(r, body, func(ctx context.Context, keyID string) (keys.NodePublic, bool, error) {
		k, j, ok, err := s.cfg.Joins.Key(ctx, req.JoinID, keyID)
		join = j
		return k, ok, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The key proved is the join's, not yet a node's: it gets a budget of its own, as a node would.
	if err := s.nodeLimit.allow("join:"+join.ID(), s.now()); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.cfg.Joins.Status(r.Context(), join))
}

// claim takes in what the node reports and holds the request until a job is queued for it or the wait
// runs out. A claim is capped at what the node reported it needs.
func (s *Server) claim(w http.ResponseWriter, r *http.Request, node nodes.Proven, body []byte) {
	if capacity := node.ClaimCap(); int64(len(body)) > capacity {
		s.writeError(w, r, errcode.New(errcode.RequestTooLarge, "claim is over this node's %d-byte cap; report claim_size", capacity).With(errcode.DetailCap, capacity))
		return
	}
	var req channel.ClaimRequest
	if err := decodeLenient(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	resp, err := s.cfg.Jobs.Claim(ctx, node, req, s.holdFor(ctx))
	if ctx.Err() != nil {
		return // the node went away
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
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

// result records how a job ended (and, when the result carries one, takes the node's next claim).
func (s *Server) result(w http.ResponseWriter, r *http.Request, node nodes.Proven, body []byte, nonce jobs.Nonce) {
	var req channel.ResultRequest
	if err := decodeLenient(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	resp, err := s.cfg.Jobs.Result(r.Context(), node, req, nonce)
	if err != nil {
		if errcode.Has(err, errcode.ChannelReplayed) {
			s.signatureFailed(err) // counted as the verifier's refusals are
		}
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) jobStatus(w http.ResponseWriter, r *http.Request, node nodes.Proven, body []byte) {
	var req channel.JobStatusRequest
	if err := decodeLenient(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	resp, err := s.cfg.Jobs.Status(r.Context(), node, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) leave(w http.ResponseWriter, r *http.Request, node nodes.Proven, body []byte) {
	var req channel.LeaveRequest
	if err := decodeLenient(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	resp, err := s.cfg.Nodes.Leave(r.Context(), node, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// artifact serves the node's target statement, a stored artifact by digest, the target release's
// agent binary for a platform, or a log's consistency proof. It never takes a path.
func (s *Server) artifact(w http.ResponseWriter, r *http.Request, node nodes.Proven, _ []byte) {
	if q := r.URL.Query(); q.Has("log_proof") {
		p, err := s.cfg.LogViews.ProofFor(r.Context(), q)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, p)
		return
	}
	if q := r.URL.Query(); len(q) == 1 && q.Has("sha256") {
		// By digest: what a release pins, or the content of the node's own footprint (roles).
		data, err := s.cfg.Roles.Artifact(r.Context(), node.ID(), q.Get("sha256"))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeBytes(w, "application/octet-stream", data)
		return
	}
	s.serveArtifact(w, r, node.Target())
}

// serveArtifact answers an artifact request with what the releases room gives for target.
func (s *Server) serveArtifact(w http.ResponseWriter, r *http.Request, target int64) {
	data, contentType, err := s.cfg.Releases.Artifact(r.Context(), target, r.URL.Query())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeBytes(w, contentType, data)
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
