package sqlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// Bounds of what a claim reports (store.MaxRefLen is the exported one).
const (
	maxVocabulary   = 4096
	maxRecipesBytes = 1 << 20
)

func (s *sqlStore) NodeGet(ctx context.Context, p NodeGetParams) (Node, error) {
	query, key := s.q.NodeGet, p.ID
	switch {
	case p.ID != "" && p.Name != "", p.ID == "" && p.Name == "":
		return Node{}, invalid("id", "give a node id or a name")
	case p.Name != "":
		query, key = s.q.NodeGetByName, p.Name
	default:
		if err := checkID("id", p.ID); err != nil {
			return Node{}, err
		}
	}
	var n Node
	err := s.read(ctx, "get node", func(ex sqldb.Execer) error {
		var err error
		n, err = s.nodeGet(ctx, ex, query, key)
		return err
	})
	return n, err
}

func (s *sqlStore) nodeGet(ctx context.Context, ex sqldb.Execer, query, key string) (Node, error) {
	n, err := scanNode(ex.QueryRow(ctx, query, key))
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return Node{}, errcode.New(errcode.NodeNotFound, "no node %s", key).With("node", key)
	}
	return n, err
}

func (s *sqlStore) NodeGetByKey(ctx context.Context, p NodeGetByKeyParams) (Node, error) {
	if err := checkFingerprint("fingerprint", p.Fingerprint); err != nil {
		return Node{}, err
	}
	var n Node
	err := s.read(ctx, "get node by key", func(ex sqldb.Execer) error {
		var err error
		if n, err = s.nodeGet(ctx, ex, s.q.NodeGetByKey, p.Fingerprint); err != nil {
			return err
		}
		return active(n)
	})
	if err != nil {
		return Node{}, err
	}
	return n, nil
}

func active(n Node) error {
	if n.State != NodeActive {
		return errcode.New(errcode.NodeNotActive, "node %s is %s; the machine must join again with a fresh key", n.ID, n.State).
			With(errcode.DetailID, n.ID).With(errcode.DetailState, string(n.State))
	}
	return nil
}

func (s *sqlStore) NodeList(ctx context.Context, p NodeListParams) (NodeListResult, error) {
	switch p.State {
	case "", NodeActive, NodeDisconnected, NodeLeft:
	default:
		return NodeListResult{}, invalid("state", "unknown node state %q", p.State)
	}
	if err := checkCursor(p.Cursor); err != nil {
		return NodeListResult{}, err
	}
	limit, err := listLimit(p.Limit)
	if err != nil {
		return NodeListResult{}, err
	}
	if err := checkNodeFilter(p.Filter); err != nil {
		return NodeListResult{}, err
	}
	query, args := s.q.NodeList, []any{string(p.State), p.Cursor, int64(limit + 1)}
	if f := p.Filter; !f.IsZero() {
		query, args = s.q.NodeListFiltered, append(args, f.LabelKey, f.LabelValue, f.Word, f.AgentVersion)
	}
	var res NodeListResult
	err = s.read(ctx, "list nodes", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			n, err := scanNode(rs)
			if err != nil {
				return err
			}
			res.Nodes = append(res.Nodes, n)
		}
		return rs.Err()
	})
	if len(res.Nodes) > limit {
		res.Nodes = res.Nodes[:limit]
		res.NextCursor = res.Nodes[limit-1].ID
	}
	return res, err
}

func checkNodeReport(p *NodeReportParams) error {
	if err := checkID("id", p.ID); err != nil {
		return err
	}
	if len(p.AgentVersion) > MaxRefLen || len(p.StatementDigest) > MaxRefLen || !ValidText(p.AgentVersion+p.StatementDigest) {
		return invalid("agent_version", "agent version and statement digest are at most %d bytes of UTF-8 without NUL", MaxRefLen)
	}
	if len(p.Untrusted) > MaxMessageLen || !ValidText(p.Untrusted) {
		return invalid("untrusted", "untrusted is at most %d bytes of UTF-8 without NUL", MaxMessageLen)
	}
	if len(p.ReportDigest) > MaxRefLen || !ValidText(p.ReportDigest) {
		return invalid("report_digest", "report digest is at most %d bytes of UTF-8 without NUL", MaxRefLen)
	}
	if err := checkNodeUpdate(&p.Update); err != nil {
		return err
	}
	if err := checkNodeCheckpoints(p.Checkpoints); err != nil {
		return err
	}
	if err := checkNodeFacts(p.Facts); err != nil {
		return err
	}
	if err := checkNodeReach(p.Reach); err != nil {
		return err
	}
	if p.StatementSequence < 0 || p.ClaimSizeCap < 0 {
		return invalid("statement_sequence", "statement sequence and claim size cap cannot be negative")
	}
	if len(p.Vocabulary) > maxVocabulary {
		return invalid("vocabulary", "%d words, at most %d", len(p.Vocabulary), maxVocabulary)
	}
	seen := map[string]bool{}
	for _, w := range p.Vocabulary {
		if w.Name == "" || len(w.Name) > MaxRefLen || len(w.Version) > MaxRefLen || len(w.Digest) > MaxRefLen || len(w.Class) > MaxRefLen {
			return invalid("vocabulary", "a word needs a name, and each field is at most %d bytes", MaxRefLen)
		}
		if !ValidText(w.Name + w.Version + w.Digest + w.Class) {
			return invalid("vocabulary", "a word's fields are UTF-8 without NUL")
		}
		if seen[w.Name] {
			return invalid("vocabulary", "word %s is reported twice", w.Name)
		}
		seen[w.Name] = true
	}
	if p.Recipes != nil {
		var list []json.RawMessage
		if len(p.Recipes) > maxRecipesBytes || json.Unmarshal(p.Recipes, &list) != nil || list == nil {
			return invalid("recipes", "recipes must be a JSON array of at most %d bytes", maxRecipesBytes)
		}
		// PostgreSQL's jsonb keeps neither invalid UTF-8 nor NUL.
		if !utf8.Valid(p.Recipes) || bytes.Contains(p.Recipes, []byte(`\u0000`)) {
			return invalid("recipes", "recipes must be UTF-8 without NUL")
		}
	}
	return nil
}

func (s *sqlStore) NodeReport(ctx context.Context, p NodeReportParams) (Node, error) {
	if err := checkNodeReport(&p); err != nil {
		return Node{}, err
	}
	vocab := p.Vocabulary
	if vocab == nil {
		vocab = []WordRef{}
	}
	vocabJSON, _ := json.Marshal(vocab)
	recipes := p.Recipes
	if recipes == nil {
		recipes = json.RawMessage(`[]`)
	}
	updateJSON, _ := json.Marshal(p.Update)
	factsJSON := []byte(`{}`)
	if !p.Facts.CollectedAt.IsZero() {
		factsJSON, _ = json.Marshal(p.Facts)
	}
	reach := p.Reach
	if reach == nil {
		reach = []WordReach{}
	}
	reachJSON, _ := json.Marshal(reach)
	t := now(p.Now)
	var n Node
	var matched bool
	// A report lost to a crash of the database's machine is sent again on the next claim: it may
	// commit without waiting for the disk, and goes in one round trip.
	steps := []sqldb.Step{
		{Query: s.q.RelaxCommit},
		{Query: s.q.NodeReport, Args: []any{p.ID, t, p.AgentVersion, p.StatementSequence, p.StatementDigest,
			string(vocabJSON), string(recipes), p.Idle, p.ClaimSizeCap, p.Untrusted, p.ReportDigest,
			p.Update.State, p.Update.Offered, string(updateJSON), string(factsJSON), string(reachJSON)}, Scan: func(r sqldb.Row) error {
			var err error
			n, err = scanNode(r)
			if s.drv.Kind(err) == sqldb.ErrNoRows {
				return nil
			}
			matched = err == nil
			return err
		}},
	}
	err := s.pipeline(ctx, "record node report", append(steps, s.checkpointSteps(p)...)...)
	if err != nil {
		return Node{}, err
	}
	if !matched {
		return Node{}, s.read(ctx, "record node report", func(ex sqldb.Execer) error { return s.nodeNotActive(ctx, ex, p.ID) })
	}
	return n, nil
}

func (s *sqlStore) NodeSeen(ctx context.Context, p NodeSeenParams) error {
	if err := checkID("id", p.ID); err != nil {
		return err
	}
	var matched bool
	// As NodeReport: a crash may lose it, and the next claim records it again.
	err := s.pipeline(ctx, "record node seen",
		sqldb.Step{Query: s.q.RelaxCommit},
		sqldb.Step{Query: s.q.NodeSeen, Args: []any{p.ID, now(p.Now), p.Idle}, Scan: func(r sqldb.Row) error {
			// NodeSeen returns the id it updated, so that a pipeline can tell a match.
			var id string
			err := r.Scan(&id)
			if s.drv.Kind(err) == sqldb.ErrNoRows {
				return nil
			}
			matched = err == nil
			return err
		}})
	if err != nil {
		return err
	}
	if !matched {
		return s.read(ctx, "record node seen", func(ex sqldb.Execer) error { return s.nodeNotActive(ctx, ex, p.ID) })
	}
	return nil
}

// nodeNotActive explains why a statement meant for an active node matched nothing.
func (s *sqlStore) nodeNotActive(ctx context.Context, ex sqldb.Execer, id string) error {
	n, err := s.nodeGet(ctx, ex, s.q.NodeGet, id)
	if err != nil {
		return err
	}
	if err := active(n); err != nil {
		return err
	}
	return errcode.New(errcode.NodeNotActive, "node %s changed while it was being updated", id).With(errcode.DetailID, id)
}

func (s *sqlStore) NodeDisconnect(ctx context.Context, p NodeEndParams) (NodeEndResult, error) {
	return s.nodeEnd(ctx, p, NodeDisconnected, retiredByNodeDisconnection, "the plane disconnected the node")
}

func (s *sqlStore) NodeLeave(ctx context.Context, p NodeEndParams) (NodeEndResult, error) {
	return s.nodeEnd(ctx, p, NodeLeft, retiredByNodeLeaving, "the node left the plane")
}

func (s *sqlStore) nodeEnd(ctx context.Context, p NodeEndParams, state NodeState, retired, why string) (NodeEndResult, error) {
	if err := checkID("id", p.ID); err != nil {
		return NodeEndResult{}, err
	}
	if err := checkActor(p.By); err != nil {
		return NodeEndResult{}, err
	}
	t := now(p.Now)
	var res NodeEndResult
	err := s.tx(ctx, "end node", func(ex sqldb.Execer) error {
		// The node's live jobs first, then its row: the order JobFinish takes them in.
		if _, err := ex.Exec(ctx, s.q.NodeEndLockJobs, p.ID); err != nil {
			return err
		}
		var err error
		res.Node, err = scanNode(ex.QueryRow(ctx, s.q.NodeEnd, p.ID, string(state), t))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return s.nodeNotActive(ctx, ex, p.ID)
		}
		if err != nil {
			return err
		}
		if _, err := ex.Exec(ctx, s.q.KeyRetire, res.Node.Fingerprint, retired, t); err != nil {
			return err
		}
		if res.Cancelled, err = s.jobs(ctx, ex, s.q.JobCancelQueuedForNode, p.ID, t, errcode.JobCancelled, why, p.By); err != nil {
			return err
		}
		res.Lost, err = s.jobs(ctx, ex, s.q.JobLoseRunning, p.ID, t, errcode.JobLost, why)
		return err
	})
	return res, err
}

func scanNode(r sqldb.Row) (Node, error) {
	var n Node
	var addrs, vocab, recipes, labels, update, facts []byte
	var state, updateState, updateOffered string
	if err := r.Scan(&n.ID, &n.Name, &n.Key, &n.Fingerprint, &addrs, &state, stamp{&n.CreatedAt},
		stamp{&n.LastSeenAt}, stamp{&n.EndedAt}, &n.AgentVersion, &n.StatementSequence, &n.StatementDigest,
		&vocab, &recipes, &n.Idle, &n.ClaimSizeCap, &n.Refusals, &n.Untrusted, &labels, &n.TargetSequence, &n.ReportDigest,
		&updateState, &updateOffered, &update, &facts); err != nil {
		return Node{}, err
	}
	if len(facts) > 0 {
		_ = json.Unmarshal(facts, &n.Facts) // as the update report: what the store took was valid
	}
	n.Labels = map[string]string{}
	if err := json.Unmarshal(labels, &n.Labels); err != nil {
		return Node{}, err
	}
	if len(update) > 0 {
		_ = json.Unmarshal(update, &n.Update) // a report the store took was valid; a damaged one reads as none
	}
	n.Update.State, n.Update.Offered = updateState, updateOffered
	n.State = NodeState(state)
	if err := json.Unmarshal(addrs, &n.Addresses); err != nil {
		return Node{}, err
	}
	if err := json.Unmarshal(vocab, &n.Vocabulary); err != nil {
		return Node{}, err
	}
	n.Recipes = json.RawMessage(recipes)
	return n, nil
}

// checkNodeReach holds a report's reach to the channel's caps: the node's own text, shown on the node
// and word pages.
func checkNodeReach(reach []WordReach) error {
	if len(reach) > channel.MaxReachWords {
		return invalid("reach", "at most %d words", channel.MaxReachWords)
	}
	text := func(field, t string) error {
		if len(t) > channel.MaxReachText || !ValidText(t) {
			return invalid(field, "at most %d bytes of UTF-8 without NUL", channel.MaxReachText)
		}
		return nil
	}
	for _, w := range reach {
		if w.Word == "" {
			return invalid("reach.word", "each reach names its word")
		}
		if len(w.Caps) > channel.MaxReachCaps {
			return invalid("reach.caps", "at most %d capabilities a word", channel.MaxReachCaps)
		}
		for _, t := range []string{w.Word, w.Digest, w.Refused} {
			if err := text("reach", t); err != nil {
				return err
			}
		}
		for _, c := range w.Caps {
			for _, t := range []string{c.Cap, c.Denied, c.Note} {
				if err := text("reach.caps", t); err != nil {
					return err
				}
			}
			for _, l := range c.Lists() {
				if len(*l.List) > channel.MaxReachList {
					return invalid("reach.caps."+l.Name, "at most %d entries", channel.MaxReachList)
				}
				for _, t := range *l.List {
					if err := text("reach.caps."+l.Name, t); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func (s *sqlStore) NodeReachGet(ctx context.Context, p NodeReachGetParams) ([]WordReach, error) {
	if err := checkID("id", p.ID); err != nil {
		return nil, err
	}
	var raw []byte
	err := s.read(ctx, "get node reach", func(ex sqldb.Execer) error {
		return ex.QueryRow(ctx, s.q.NodeReachGet, p.ID).Scan(&raw)
	})
	if s.drv.Kind(err) == sqldb.ErrNoRows {
		return nil, errcode.New(errcode.NodeNotFound, "no node %s", p.ID).With(errcode.DetailID, p.ID)
	}
	if err != nil {
		return nil, err
	}
	out := []WordReach{}
	_ = json.Unmarshal(raw, &out) // as the facts: what the store took was valid
	return out, nil
}

// checkNodeFacts holds a report's host facts to the channel's caps: the node's own text, shown and
// filtered by.
func checkNodeFacts(f NodeFacts) error {
	for _, t := range []string{f.OS, f.OSName, f.Kernel, f.Arch, f.Hostname, f.CPUModel} {
		if len(t) > channel.MaxFactText || !ValidText(t) {
			return invalid("facts", "each fact is at most %d bytes of UTF-8 without NUL", channel.MaxFactText)
		}
	}
	if len(f.Addresses) > channel.MaxFactAddresses {
		return invalid("facts.addresses", "at most %d addresses", channel.MaxFactAddresses)
	}
	for _, a := range f.Addresses {
		if a == "" || len(a) > channel.MaxFactText || !ValidText(a) {
			return invalid("facts.addresses", "an address is 1 to %d bytes of UTF-8 without NUL", channel.MaxFactText)
		}
	}
	if f.CPUs < 0 || f.MemoryBytes < 0 || f.MemoryFreeBytes < 0 || f.DiskBytes < 0 || f.DiskFreeBytes < 0 {
		return invalid("facts", "counts and sizes cannot be negative")
	}
	return nil
}

// checkNodeUpdate holds an update report to the closed set of states and the caps: it is the node's
// own text, shown to operators.
func checkNodeUpdate(u *NodeUpdate) error {
	if u.State != "" && !slices.Contains(UpdateStates, u.State) {
		return invalid("update.state", "update state %q is not one of %v", u.State, UpdateStates)
	}
	if len(u.Offered) > MaxRefLen || len(u.NeedsNewerAgent) > MaxRefLen || !ValidText(u.Offered+u.NeedsNewerAgent) {
		return invalid("update.offered", "offered and needs_newer_agent are at most %d bytes of UTF-8 without NUL", MaxRefLen)
	}
	if len(u.Reason) > MaxMessageLen || !ValidText(u.Reason) {
		return invalid("update.reason", "reason is at most %d bytes of UTF-8 without NUL", MaxMessageLen)
	}
	if len(u.History) > MaxUpdateHistory {
		u.History = u.History[len(u.History)-MaxUpdateHistory:]
	}
	for _, e := range u.History {
		if len(e.Event) > MaxRefLen || len(e.From) > MaxRefLen || len(e.To) > MaxRefLen || len(e.Detail) > MaxMessageLen ||
			!ValidText(e.Event+e.From+e.To+e.Detail) {
			return invalid("update.history", "an update event's fields are bounded UTF-8 without NUL")
		}
	}
	return nil
}
