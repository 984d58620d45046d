package server

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// logProof answers artifact?log_proof=<origin>&old=<size>&new=<size> with the log's consistency proof,
// which the node verifies itself.
func (s *Server) logProof(w http.ResponseWriter, r *http.Request, q url.Values) {
	old, err1 := strconv.ParseUint(q.Get("old"), 10, 64)
	new, err2 := strconv.ParseUint(q.Get("new"), 10, 64)
	if len(q) != 3 || err1 != nil || err2 != nil || q.Get("log_proof") == "" {
		s.writeError(w, r, errcode.New(errcode.RequestMalformed, "ask for log_proof=<origin>&old=<size>&new=<size>"))
		return
	}
	if s.cfg.LogViews == nil {
		s.writeError(w, r, errcode.New(errcode.LogUnavailable, "this plane reads no transparency log (lexicon-plane serve --log-url)"))
		return
	}
	p, err := s.cfg.LogViews.Proof(r.Context(), q.Get("log_proof"), old, new)
	if err != nil {
		s.writeError(w, r, errcode.From(err, errcode.LogUnavailable))
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// checkpointsFromClaim keeps the checkpoints of a claim the store can hold: at most one a log, each
// well formed. What is left out is logged, not refused: a claim must not fail over a view.
func (s *Server) checkpointsFromClaim(node store.Node, cps []channel.Checkpoint) []store.NodeCheckpoint {
	out := []store.NodeCheckpoint{}
	seen := map[string]bool{}
	dropped := 0
	for _, c := range cps {
		sc := store.NodeCheckpoint{Origin: c.Origin, Size: int64(c.Size), RootHash: c.RootHash}
		if c.Size > 1<<62 || !store.ValidCheckpoint(sc) || seen[c.Origin] || len(out) == store.MaxNodeCheckpoints {
			dropped++
			continue
		}
		seen[c.Origin] = true
		out = append(out, sc)
	}
	if dropped > 0 {
		s.log.Warn("checkpoints left out of a node's report", "code", errcode.RequestMalformed, "node", node.ID, "dropped", dropped)
	}
	return out
}
