// Package nodes keeps the plane's paired nodes: it proves a signed request's node by its key, takes in
// what a node reports on each claim, answers an operator's questions about nodes (list, show, the word a
// node runs with its params schema, the fleet's counts) and carries out what an operator decides about
// one (label, disconnect) and what a node says of itself (leave).
package nodes

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"time"

	"golang.org/x/mod/semver"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/lease"
	"github.com/lexicon-fleet/lexicon/plane/internal/nodetext"
	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what the nodes room reads and writes.
type Store interface {
	NodeGet(ctx context.Context, p store.NodeGetParams) (store.Node, error)
	NodeGetByKey(ctx context.Context, p store.NodeGetByKeyParams) (store.Node, error)
	NodeList(ctx context.Context, p store.NodeListParams) (store.NodeListResult, error)
	NodeCount(ctx context.Context, p store.NodeCountParams) (store.NodeCounts, error)
	FleetTarget(ctx context.Context) (int64, error)
	NodeReport(ctx context.Context, p store.NodeReportParams) (store.Node, error)
	NodeReachGet(ctx context.Context, p store.NodeReachGetParams) ([]store.WordReach, error)
	NodeCheckpointList(ctx context.Context, p store.NodeCheckpointListParams) ([]store.NodeCheckpoint, error)
	NodeSeen(ctx context.Context, p store.NodeSeenParams) error
	NodeDisconnect(ctx context.Context, p store.NodeEndParams) (store.NodeEndResult, error)
	NodeLeave(ctx context.Context, p store.NodeEndParams) (store.NodeEndResult, error)
	NodeLabel(ctx context.Context, p store.NodeLabelParams) (store.Node, error)
	NonceUse(ctx context.Context, p store.NonceUseParams) (bool, error)
}

// Intaker takes in the cases a claim carries (the cases room).
type Intaker interface {
	Intake(ctx context.Context, nodeID, nodeName string, reports []channel.CaseReport) error
}

// Config sets up the room.
type Config struct {
	Store Store
	Log   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Releases tells which release a node is served and what the stored releases pin.
	Releases *releases.Room
	// Leases lists the leases a node is under.
	Leases *lease.Room
	// Cases takes in the cases a claim carries; nil drops them.
	Cases Intaker
	// Jobs is told of the jobs an ended pairing cancelled or lost (nil: no one is).
	Jobs JobsEnder
}

// JobsEnder takes in the jobs a room other than the jobs room ended: the jobs room counts them and
// moves their batches on, so that a batch never waits on the job of a node that is gone.
type JobsEnder interface {
	Ended(ctx context.Context, ended ...store.Job)
}

// Room is the nodes' Go API, which the HTTP server and the web UI both call.
type Room struct {
	c   Config
	log *slog.Logger
}

// New makes the room.
func New(c Config) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Room{c: c, log: services.Logger(c.Log)}
}

// Proven is the node a request's signature proved: the handlers of the agent channel act for it, never
// for an id in the body.
type Proven struct{ n store.Node }

// ID is the node's id.
func (p Proven) ID() string { return p.n.ID }

// ClaimCap is the largest claim body the node may send: what it reported it needs, at least the
// channel's default.
func (p Proven) ClaimCap() int64 { return max(p.n.ClaimSizeCap, channel.DefaultBodyCap) }

// Target is the sequence of the release the node is served (0 before any).
func (p Proven) Target() int64 { return p.n.TargetSequence }

// Node is the node as the store holds it, for the rooms that act for it.
func (p Proven) Node() store.Node { return p.n }

// Key finds the public key of the ACTIVE node holding keyID, for a signature's verifier. A key no
// active node holds is not found (false): an ended pairing proves nothing.
func (r *Room) Key(ctx context.Context, keyID string) (keys.NodePublic, Proven, bool, error) {
	n, err := r.c.Store.NodeGetByKey(ctx, store.NodeGetByKeyParams{Fingerprint: keyID})
	if errcode.Has(err, errcode.NodeNotFound) {
		return keys.NodePublic{}, Proven{}, false, nil
	}
	if err != nil {
		return keys.NodePublic{}, Proven{}, false, err
	}
	k, err := keys.ParseNodePublic(n.Key)
	return k, Proven{n}, err == nil, err
}

// NonceUse records a signed request's nonce in the store, so that every replica sees every nonce; it
// is the verifier's httpsig.NonceStore.
func (r *Room) NonceUse(ctx context.Context, keyID, nonce string, expires time.Time) (bool, error) {
	return r.c.Store.NonceUse(ctx, store.NonceUseParams{KeyID: keyID, Nonce: nonce, ExpiresAt: expires})
}

// seenEvery is how stale a node's last-seen time may grow before a claim whose report the plane
// already holds writes it again: a claim that changes nothing the plane keeps costs no write, and
// last_seen_at stays well inside the silence the incident detector waits for (10 minutes by default).
const seenEvery = time.Minute

// Report records what a claim says of the node and takes in its cases, and starts the answer. The
// report is written only when it changed: a claim naming the digest of the report the plane holds (or
// leaving the report out) writes at most when the node was last seen and whether it is idle, and that
// only when it changed or grew stale. A brief claim naming a report the plane does not hold is answered
// with SendReport.
func (r *Room) Report(ctx context.Context, node Proven, req *channel.ClaimRequest) (channel.ClaimResponse, error) {
	n := node.n
	resp := channel.ClaimResponse{Statement: r.c.Releases.Statement(ctx, n.TargetSequence)}
	held := n.ReportDigest
	known, record, seen := r.writes(n, req)
	switch {
	case record:
		if err := r.record(ctx, n, req); err != nil {
			return resp, err
		}
		held = req.ReportDigest
	case seen:
		if err := r.c.Store.NodeSeen(ctx, store.NodeSeenParams{ID: n.ID, Now: r.c.Now(), Idle: req.Idle}); err != nil {
			return resp, err
		}
	}
	resp.ReportDigest = held
	resp.SendReport = req.ReportOmitted && !known
	// Cases are taken in before the long poll, so that an incident opens while the claim waits.
	if r.c.Cases == nil {
		return resp, nil
	}
	return resp, r.c.Cases.Intake(ctx, n.ID, n.Name, req.Cases)
}

// writes is what Report writes for req: the whole report (record), or the node's last-seen time and
// idle flag (seen), or nothing; known is whether the plane holds the report req names.
func (r *Room) writes(n store.Node, req *channel.ClaimRequest) (known, record, seen bool) {
	known = req.ReportDigest != "" && req.ReportDigest == n.ReportDigest
	record = !req.ReportOmitted && !known
	seen = !record && (n.Idle != req.Idle || r.c.Now().Sub(n.LastSeenAt) >= seenEvery)
	return known, record, seen
}

// ReportQuiet is Report for a claim it would write nothing for (no report, no cases) but perhaps the
// node's last-seen time and idle flag: it answers as Report would, with quiet true, and seen true when
// the caller must record the node as seen at the plane's now and idle, as NodeSeen would (the result's
// own transaction does: store.JobFinishParams.Seen, so a round trip costs no statement for it). For any
// other claim it does nothing and returns quiet false. A result whose claim is quiet may record its
// nonce in its own transaction, after the claim (jobs.Room.Result): a replay of it changes nothing
// before that transaction refuses it.
func (r *Room) ReportQuiet(ctx context.Context, node Proven, req *channel.ClaimRequest) (resp channel.ClaimResponse, quiet, seen bool) {
	known, record, seen := r.writes(node.n, req)
	if record || (seen && !req.Idle) || (r.c.Cases != nil && len(req.Cases) > 0) {
		return channel.ClaimResponse{}, false, false
	}
	n := node.n
	return channel.ClaimResponse{Statement: r.c.Releases.Statement(ctx, n.TargetSequence), ReportDigest: n.ReportDigest,
		SendReport: req.ReportOmitted && !known}, true, seen
}

// record writes a claim's full report.
func (r *Room) record(ctx context.Context, node store.Node, req *channel.ClaimRequest) error {
	vocab := make([]store.WordRef, len(req.Vocabulary))
	for i, w := range req.Vocabulary {
		vocab[i] = store.WordRef{Name: w.Name, Version: w.Version, Digest: w.Digest, Class: w.Class}
	}
	var recipes []byte
	if req.Recipes != nil {
		list, cut := capRecipes(req.Recipes)
		if len(cut) > 0 {
			r.log.Warn("recipe report capped", "code", errcode.CaseCapped, "node", node.ID, "fields", []string(cut))
		}
		recipes, _ = json.Marshal(list)
	}
	untrusted, _ := nodetext.Cap(req.Untrusted, channel.MaxCaseText)
	cps := r.checkpointsFromClaim(node, req.Checkpoints)
	digest, _ := nodetext.Cap(req.ReportDigest, store.MaxRefLen)
	claimCap := int64(min(max(req.ClaimSize, channel.DefaultBodyCap), channel.MaxClaimCap))
	upd := updateFromClaim(req.Update)
	if _, err := r.c.Store.NodeReport(ctx, store.NodeReportParams{
		ID: node.ID, Now: r.c.Now(), AgentVersion: req.Version, StatementSequence: int64(req.Statement.Sequence),
		StatementDigest: req.Statement.Digest, Vocabulary: vocab, Recipes: recipes, Idle: req.Idle, ClaimSizeCap: claimCap,
		Untrusted: untrusted, ReportDigest: digest, Update: upd, Checkpoints: cps, Facts: factsFromClaim(req.Facts),
		Reach: reachFromClaim(req.Reach),
	}); err != nil {
		return err
	}
	if seq := int64(req.Statement.Sequence); seq != node.StatementSequence {
		// Rare (a node takes each statement once) and what an operator follows a release by.
		r.log.Info("node took a statement", "node", node.ID, "sequence", seq, "words", len(vocab))
	}
	if untrusted != "" {
		r.log.Warn("node cannot verify the plane's statement", "node", node.ID, "reason", untrusted)
	}
	if upd.State != node.Update.State || upd.Offered != node.Update.Offered || upd.NeedsNewerAgent != node.Update.NeedsNewerAgent ||
		req.Version != node.AgentVersion {
		// Rare (a few times an update) and what an operator, and the update tests, follow an update by.
		r.log.Info("node update state", "node", node.ID, "version", req.Version, "state", upd.State, "offered", upd.Offered,
			"needs_newer_agent", upd.NeedsNewerAgent)
	}
	return nil
}

// checkpointsFromClaim keeps the checkpoints of a claim the store can hold: at most one a log, each
// well formed. What is left out is logged, not refused: a claim must not fail over a view.
func (r *Room) checkpointsFromClaim(node store.Node, cps []channel.Checkpoint) []store.NodeCheckpoint {
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
		r.log.Warn("checkpoints left out of a node's report", "code", errcode.RequestMalformed, "node", node.ID, "dropped", dropped)
	}
	return out
}

// capRecipes bounds the recipe list a claim reports and cleans its text, so that the node's report is
// always storable (PostgreSQL's jsonb refuses NUL in text).
func capRecipes(in []channel.RecipeReport) ([]channel.RecipeReport, nodetext.Capped) {
	var cut nodetext.Capped
	if len(in) > channel.MaxRecipes {
		in = in[:channel.MaxRecipes]
		cut.Add("recipes")
	}
	out := make([]channel.RecipeReport, len(in))
	for i, r := range in {
		out[i] = channel.RecipeReport{
			Name: cut.Text("recipes.name", r.Name, 255), Version: cut.Text("recipes.version", r.Version, 255),
			Digest: cut.Text("recipes.digest", r.Digest, 255), State: cut.Text("recipes.state", r.State, 64),
			LastVerdict: cut.Text("recipes.last_verdict", r.LastVerdict, 64), LastCheckAt: r.LastCheckAt,
			Detail: cut.Text("recipes.detail", r.Detail, channel.MaxCaseText),
		}
	}
	return out, cut
}

// factsFromClaim takes a claim's host facts into the store's form, each text cut to its cap and the
// addresses to their count, so that a node's facts are always storable; nil records none.
func factsFromClaim(f *channel.HostFacts) store.NodeFacts {
	if f == nil || f.CollectedAt.IsZero() {
		return store.NodeFacts{}
	}
	out := *f
	for _, s := range []*string{&out.OS, &out.OSName, &out.Kernel, &out.Arch, &out.Hostname, &out.CPUModel} {
		*s, _ = nodetext.Cap(*s, channel.MaxFactText)
	}
	out.Addresses = nil
	for _, a := range f.Addresses {
		if a, _ = nodetext.Cap(a, channel.MaxFactText); a != "" && len(out.Addresses) < channel.MaxFactAddresses {
			out.Addresses = append(out.Addresses, a)
		}
	}
	out.CPUs = max(out.CPUs, 0)
	out.MemoryBytes, out.MemoryFreeBytes = max(out.MemoryBytes, 0), max(out.MemoryFreeBytes, 0)
	out.DiskBytes, out.DiskFreeBytes = max(out.DiskBytes, 0), max(out.DiskFreeBytes, 0)
	return out
}

// reachFromClaim takes a claim's reach into the store's form, cut to the channel's caps (words,
// capabilities, list entries, text), so that a node's reach is always storable; a word without a name
// is dropped.
func reachFromClaim(in []channel.WordReach) []store.WordReach {
	out := []store.WordReach{}
	for _, w := range in {
		if len(out) == channel.MaxReachWords {
			break
		}
		if w.Word == "" {
			continue
		}
		cw := channel.WordReach{Caps: []channel.CapReach{}}
		cw.Word, _ = nodetext.Cap(w.Word, channel.MaxReachText)
		cw.Digest, _ = nodetext.Cap(w.Digest, channel.MaxReachText)
		cw.Refused, _ = nodetext.Cap(w.Refused, channel.MaxReachText)
		for _, c := range w.Caps[:min(len(w.Caps), channel.MaxReachCaps)] {
			cc := channel.CapReach{Narrowed: c.Narrowed}
			cc.Cap, _ = nodetext.Cap(c.Cap, channel.MaxReachText)
			cc.Denied, _ = nodetext.Cap(c.Denied, channel.MaxReachText)
			cc.Note, _ = nodetext.Cap(c.Note, channel.MaxReachText)
			src, dst := c.Lists(), cc.Lists()
			for i := range src {
				for _, e := range (*src[i].List)[:min(len(*src[i].List), channel.MaxReachList)] {
					e, _ = nodetext.Cap(e, channel.MaxReachText)
					*dst[i].List = append(*dst[i].List, e)
				}
			}
			cw.Caps = append(cw.Caps, cc)
		}
		out = append(out, cw)
	}
	return out
}

// updateFromClaim takes a claim's update report into the store's form, capped and cut to valid text;
// a state outside the closed set is recorded as none with the node's word for it as the reason, so
// that a newer agent with a new state is still shown rather than refused.
func updateFromClaim(u *channel.UpdateReport) store.NodeUpdate {
	if u == nil {
		return store.NodeUpdate{}
	}
	out := store.NodeUpdate{State: u.State}
	out.Offered, _ = nodetext.Cap(u.Offered, store.MaxRefLen)
	out.NeedsNewerAgent, _ = nodetext.Cap(u.NeedsNewerAgent, store.MaxRefLen)
	out.Reason, _ = nodetext.Cap(u.Reason, store.MaxMessageLen)
	if !slices.Contains(store.UpdateStates, u.State) {
		state, _ := nodetext.Cap(u.State, 64)
		out.State, out.Reason = channel.UpdateNone, "unknown update state "+state+": "+out.Reason
		out.Reason, _ = nodetext.Cap(out.Reason, store.MaxMessageLen)
	}
	hist := u.History
	if len(hist) > store.MaxUpdateHistory {
		hist = hist[len(hist)-store.MaxUpdateHistory:]
	}
	for _, e := range hist {
		ev := store.NodeUpdateEvent{At: e.At}
		ev.Event, _ = nodetext.Cap(e.Event, store.MaxRefLen)
		ev.From, _ = nodetext.Cap(e.From, store.MaxRefLen)
		ev.To, _ = nodetext.Cap(e.To, store.MaxRefLen)
		ev.Detail, _ = nodetext.Cap(e.Detail, store.MaxMessageLen)
		out.History = append(out.History, ev)
	}
	return out
}

// Leave ends the node's pairing on its own signed goodbye: it becomes left, its queued jobs are
// cancelled and a running job is lost.
func (r *Room) Leave(ctx context.Context, node Proven, req channel.LeaveRequest) (channel.LeaveResponse, error) {
	res, err := r.c.Store.NodeLeave(ctx, store.NodeEndParams{ID: node.n.ID, Now: r.c.Now()})
	if err != nil {
		return channel.LeaveResponse{}, err
	}
	r.log.Info("node left", "node", node.n.ID, "name", node.n.Name, "reason", req.Reason, "cancelled", len(res.Cancelled), "lost", len(res.Lost))
	r.JobsEnded(ctx, res.Cancelled, res.Lost)
	return channel.LeaveResponse{NodeID: node.n.ID, State: string(res.Node.State)}, nil
}

// Get finds a node by id or by the name of an active node.
func (r *Room) Get(ctx context.Context, ref string) (store.Node, error) {
	n, err := r.c.Store.NodeGet(ctx, store.NodeGetParams{ID: ref})
	if err == nil {
		return n, nil
	}
	return r.c.Store.NodeGet(ctx, store.NodeGetParams{Name: ref})
}

// Names looks up the names of the jobs' nodes, each once, so that a list shows people names rather
// than ids alone. A node the store no longer finds keeps its id only.
func (r *Room) Names(ctx context.Context, jobs []store.Job) (map[string]string, error) {
	names := map[string]string{}
	for _, j := range jobs {
		if _, done := names[j.NodeID]; done {
			continue
		}
		n, err := r.c.Store.NodeGet(ctx, store.NodeGetParams{ID: j.NodeID})
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

// updating marks a node whose target release takes it to another agent than the one it reported: in
// progress while it reports, silent once it has not for api.UpdateSilentAfter. The node's own report
// said "current" for the agent it ran before it exited for the new one; the plane must not show
// that. A node that refused the agent (its update state is a refusal, or updates are off) is not
// updating.
func (r *Room) updating(ctx context.Context, n *api.Node) {
	to := r.c.Releases.AgentOf(ctx, n.TargetSequence)
	if to == "" || to == n.AgentVersion || n.State != api.NodeState(store.NodeActive) || n.Update.State == "" ||
		n.Update.State == channel.UpdateNone || channel.UpdateRefused(n.Update.State) {
		return
	}
	n.Updating, n.UpdatingTo = api.UpdatingInProgress, to
	if r.c.Now().Sub(n.LastSeenAt) >= api.UpdateSilentAfter {
		n.Updating = api.UpdatingSilent
	}
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

// Show answers a node (by id or name) with the leases it is under, how many agent releases it is
// behind and the log checkpoints it holds.
func (r *Room) Show(ctx context.Context, who api.Token, ref string) (api.Node, error) {
	n, err := r.Get(ctx, ref)
	if err != nil {
		return api.Node{}, err
	}
	leases, err := r.c.Leases.Live(ctx, n.ID, r.c.Now())
	if err != nil {
		return api.Node{}, err
	}
	agents, err := r.c.Releases.AgentVersions(ctx)
	if err != nil {
		return api.Node{}, err
	}
	cps, err := r.c.Store.NodeCheckpointList(ctx, store.NodeCheckpointListParams{NodeID: n.ID})
	if err != nil {
		return api.Node{}, err
	}
	out := apiconv.Node(n)
	out.Leases = apiconv.Leases(leases)
	out.ReleasesBehind = behind(agents, n.AgentVersion)
	out.Checkpoints = apiconv.Checkpoints(cps)
	reach, err := r.c.Store.NodeReachGet(ctx, store.NodeReachGetParams{ID: n.ID})
	if err != nil {
		return api.Node{}, err
	}
	for i, w := range out.Vocabulary {
		out.Vocabulary[i].NodeReach = wordOnNode(reach, w.Name, w.Digest)
	}
	r.updating(ctx, &out)
	return out, nil
}

// Word answers the word a node reports with the signed manifest that pins its module, found by the
// same lookup a job is checked with, so a form made from it asks for what the plane will accept.
func (r *Room) Word(ctx context.Context, who api.Token, ref, word string) (api.Word, error) {
	node, err := r.Get(ctx, ref)
	if err != nil {
		return api.Word{}, err
	}
	w, ok := node.Word(word)
	if !ok {
		return api.Word{}, errcode.New(errcode.JobWordUnavailable, "node %s does not report the word %q", node.Name, word).
			With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, word)
	}
	m, known, err := r.c.Releases.Catalog().Word(ctx, word, w.Digest)
	if err != nil {
		return api.Word{}, err
	}
	if !known {
		return api.Word{}, errcode.New(errcode.JobWordUnavailable, "node %s reports %s with digest %s, which no release on this plane pins",
			node.Name, word, w.Digest).With(errcode.DetailNodeID, node.ID).With(errcode.DetailWord, word)
	}
	params := m.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`) // an empty schema: the word takes an empty object
	}
	reach := []api.WordReach{}
	for _, c := range m.Capabilities {
		wr := api.WordReach{Cap: c.Cap, Roots: c.Paths, Units: c.Units, Hosts: c.Hosts, Names: c.Names, Packages: c.Packages, Origins: c.Origins}
		for _, p := range c.Programs {
			wr.Programs = append(wr.Programs, p.Path)
		}
		reach = append(reach, wr)
	}
	out := api.Word{Name: m.Name, Version: m.Version, Digest: w.Digest, Class: string(m.Class), Summary: m.Summary, Params: params, Reach: reach}
	nodeReach, err := r.c.Store.NodeReachGet(ctx, store.NodeReachGetParams{ID: node.ID})
	if err != nil {
		return api.Word{}, err
	}
	out.NodeReach = wordOnNode(nodeReach, word, w.Digest)
	return out, nil
}

// wordOnNode picks a word's reach out of the node's report: only one of the module the node reports
// now, so a reach reported for an older module is never shown as this one's.
func wordOnNode(reach []store.WordReach, word, digest string) *api.NodeWordReach {
	for _, wr := range reach {
		if wr.Word != word || wr.Digest != digest {
			continue
		}
		out := &api.NodeWordReach{Refused: wr.Refused, Caps: []api.WordReach{}}
		for _, c := range wr.Caps {
			out.Caps = append(out.Caps, api.WordReach{Cap: c.Cap, Roots: c.Roots, Units: c.Units, Hosts: c.Hosts, Names: c.Names,
				Packages: c.Packages, Origins: c.Origins, Programs: c.Programs, Narrowed: c.Narrowed, Denied: c.Denied, Note: c.Note})
		}
		return out
	}
	return nil
}

// Disconnect ends a node's pairing from the plane's side: its key is retired, its queued jobs are
// cancelled and a running job is lost.
func (r *Room) Disconnect(ctx context.Context, who api.Token, ref string) (api.Disconnected, error) {
	n, err := r.Get(ctx, ref)
	if err != nil {
		return api.Disconnected{}, err
	}
	res, err := r.c.Store.NodeDisconnect(ctx, store.NodeEndParams{ID: n.ID, By: who.Name, Now: r.c.Now()})
	if err != nil {
		return api.Disconnected{}, err
	}
	r.log.Info("node disconnected", "node", n.ID, "name", n.Name, "by", who.Name)
	r.JobsEnded(ctx, res.Cancelled, res.Lost)
	named := func(j store.Job) api.Job { return apiconv.Job(j, n.Name) }
	return api.Disconnected{Node: apiconv.Node(res.Node), Cancelled: apiconv.Each(res.Cancelled, named), Lost: apiconv.Each(res.Lost, named)}, nil
}

// JobsEnded hands the jobs an ended pairing cancelled or lost to the jobs room.
func (r *Room) JobsEnded(ctx context.Context, lists ...[]store.Job) {
	if r.c.Jobs == nil {
		return
	}
	for _, list := range lists {
		r.c.Jobs.Ended(ctx, list...)
	}
}

// Label sets and removes a node's labels, which rollouts select by.
func (r *Room) Label(ctx context.Context, who api.Token, ref string, l api.LabelRequest) (api.Node, error) {
	if err := CheckLabels(l.Set, l.Remove); err != nil {
		return api.Node{}, err
	}
	n, err := r.Get(ctx, ref)
	if err != nil {
		return api.Node{}, err
	}
	n, err = r.c.Store.NodeLabel(ctx, store.NodeLabelParams{ID: n.ID, Set: l.Set, Remove: l.Remove, By: who.Name, Now: r.c.Now()})
	if err != nil {
		return api.Node{}, err
	}
	r.log.Info("node labelled", "node", n.ID, "name", n.Name, "labels", n.Labels, "by", who.Name)
	return apiconv.Node(n), nil
}

// CheckLabels refuses a label key or value outside the label grammar with node.label_invalid, before
// the store would refuse it in its own terms.
func CheckLabels(set map[string]string, remove []string) error {
	bad := func(k, format string, args ...any) error {
		return errcode.New(errcode.NodeLabelInvalid, format, args...).With(errcode.DetailLabel, k).With(errcode.DetailField, "labels")
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if !store.ValidLabelKey(k) {
			return bad(k, "label key %q must be 1 to 63 of a-z, 0-9, - _ . / starting with a letter", k)
		}
		if !store.ValidLabelValue(set[k]) {
			return bad(k, "label %s's value must be 1 to %d printable characters without spaces, ',' or '='", k, store.MaxLabelValue)
		}
	}
	for _, k := range remove {
		if !store.ValidLabelKey(k) {
			return bad(k, "label key %q is not a label key", k)
		}
	}
	if len(set) > store.MaxLabels {
		return bad("", "a node carries at most %d labels", store.MaxLabels)
	}
	return nil
}

// Fleet counts the nodes in the store: one pass, however many there are.
func (r *Room) Fleet(ctx context.Context, who api.Token) (api.Fleet, error) {
	c, err := r.c.Store.NodeCount(ctx, store.NodeCountParams{SilentBefore: r.c.Now().Add(-store.DefaultSilentAfter)})
	if err != nil {
		return api.Fleet{}, err
	}
	target, err := r.c.Store.FleetTarget(ctx)
	if err != nil {
		return api.Fleet{}, err
	}
	return api.Fleet{TargetSequence: target, Total: c.Total, Active: c.Active, Disconnected: c.Disconnected, Left: c.Left, Online: c.Online, Silent: c.Silent,
		SilentAfterSeconds: int64(store.DefaultSilentAfter / time.Second), Untrusted: c.Untrusted, BelowFloor: c.BelowFloor,
		Versions: apiconv.Each(c.Versions, func(v store.VersionCount) api.VersionCount {
			return api.VersionCount{Version: v.Version, Nodes: v.Nodes}
		})}, nil
}
