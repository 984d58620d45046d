package rollouts

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/plane/internal/releases"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/internal/tokens"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Store is what the rollouts room reads and writes: the rollouts, the nodes they select and move, and
// the releases they move them to.
type Store interface {
	NodeGet(ctx context.Context, p store.NodeGetParams) (store.Node, error)
	NodeList(ctx context.Context, p store.NodeListParams) (store.NodeListResult, error)
	NodeTargetSet(ctx context.Context, p store.NodeTargetSetParams) (store.NodeTargetSetResult, error)
	FleetTarget(ctx context.Context) (int64, error)
	FleetTargetSet(ctx context.Context, p store.FleetTargetSetParams) error
	ReleaseGet(ctx context.Context, p store.ReleaseGetParams) (store.Release, error)
	ReleaseList(ctx context.Context, p store.ReleaseListParams) ([]store.Release, error)
	RolloutCreate(ctx context.Context, p store.RolloutCreateParams) (store.Rollout, error)
	RolloutGet(ctx context.Context, p store.RolloutGetParams) (store.Rollout, error)
	RolloutList(ctx context.Context, p store.RolloutListParams) ([]store.Rollout, error)
	RolloutSetState(ctx context.Context, p store.RolloutSetStateParams) (store.Rollout, error)
	RolloutStepUpdate(ctx context.Context, p store.RolloutStepUpdateParams) (store.RolloutStepUpdateResult, error)
	JobCancel(ctx context.Context, p store.JobCancelParams) (store.Job, error)
}

// RoomConfig sets up the room.
type RoomConfig struct {
	Store Store
	// Words tells the words a release pins.
	Words WordSource
	Log   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Engine, when not nil, is this process's engine: the room wakes it after a rollout was started
	// or moved, and it holds a rollout's lease from the start, so the replica an operator started a
	// rollout through is the one that advances it (and logs it) while it lives.
	Engine Advancer
}

// Advancer is what the room needs of this process's engine.
type Advancer interface {
	Wake()
	EngineLease() store.LeaseAcquireParams
}

// Room is the rollouts' Go API, which the HTTP server and the web UI both call; the Engine advances
// what it starts.
type Room struct {
	c   RoomConfig
	log *slog.Logger
}

// NewRoom makes the room.
func NewRoom(c RoomConfig) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Room{c: c, log: services.Logger(c.Log)}
}

func (r *Room) changed() {
	if r.c.Engine != nil {
		r.c.Engine.Wake()
	}
}

// List lists rollouts newest first, without their steps and events.
func (r *Room) List(ctx context.Context, who api.Token, q api.RolloutsListQuery) (api.RolloutList, error) {
	list, err := r.c.Store.RolloutList(ctx, store.RolloutListParams{State: store.RolloutState(q.State), Limit: q.Limit})
	return api.RolloutList{Rollouts: apiconv.Each(list, apiconv.Rollout)}, err
}

// Show answers a rollout with its steps and events.
func (r *Room) Show(ctx context.Context, who api.Token, id string) (api.Rollout, error) {
	ro, err := r.c.Store.RolloutGet(ctx, store.RolloutGetParams{ID: id})
	if err != nil {
		return api.Rollout{}, err
	}
	a := apiconv.Rollout(ro)
	if ro.Kind != store.RolloutRelease || r.c.Words == nil {
		return a, nil
	}
	agent, err := r.c.Words.Agent(ctx, ro.ReleaseSequence)
	if err != nil || agent == "" {
		return a, nil // the phase is a detail: the rollout is shown without it
	}
	for i, st := range ro.Steps {
		if st.State != store.StepRunning || st.Phase != store.PhaseChange {
			continue
		}
		if n, err := r.c.Store.NodeGet(ctx, store.NodeGetParams{ID: st.NodeID}); err == nil {
			a.Steps[i].UpdatePhase = UpdatePhase(n, agent)
		}
	}
	return a, nil
}

// Start checks everything a rollout will need before it makes one: the selection and its stages, the
// role the change needs, and for each selected node that every word the rollout runs is in the node's
// target release with params its schema accepts. A refused start makes nothing.
func (r *Room) Start(ctx context.Context, who api.Token, req api.RolloutRequest) (api.Rollout, error) {
	ro, err := r.start(ctx, who, req, false, nil)
	return apiconv.Rollout(ro), err
}

// StartEach starts a job rollout whose change gives each node its own params (each, by node id; the
// footprint a roles apply renders for each node): only those nodes are selected, narrowed by
// req.Selector, and each node's params are held to the word's schema as req.Params are. req.Params
// stands for them all in the rollout's record.
func (r *Room) StartEach(ctx context.Context, who api.Token, req api.RolloutRequest, each map[string]json.RawMessage) (api.Rollout, error) {
	if len(each) == 0 {
		return api.Rollout{}, errcode.New(errcode.RolloutEmptySelection, "no node is given its params")
	}
	ro, err := r.start(ctx, who, req, false, each)
	return apiconv.Rollout(ro), err
}

// DeployAll starts the fleet-wide rollout of release seq that publishing with deploy_all asks for, ten
// nodes at a time. Refused: rollout.empty_selection when no node is active, and as Start.
func (r *Room) DeployAll(ctx context.Context, who api.Token, seq int64) (string, error) {
	ro, err := r.start(ctx, who, api.RolloutRequest{Release: seq, Selector: "all", MaxParallel: 10}, true, nil)
	return ro.ID, err
}

var _ releases.Deployer = (*Room)(nil)

func (r *Room) start(ctx context.Context, who api.Token, req api.RolloutRequest, fleetWide bool, each map[string]json.RawMessage) (store.Rollout, error) {
	if (req.Release == 0) == (req.Word == "") {
		return store.Rollout{}, errcode.New(errcode.RequestMalformed, "a rollout takes a release or a word, one of the two").With(errcode.DetailField, "word")
	}
	if req.MaxParallel < 0 || req.ErrorBudget < 0 || req.StepTimeoutMS < 0 || req.Canary < 0 {
		return store.Rollout{}, errcode.New(errcode.RequestMalformed, "max_parallel, error_budget, step_timeout_ms and canary must not be negative").With(errcode.DetailField, "max_parallel")
	}
	nodes, err := r.activeNodes(ctx)
	if err != nil {
		return store.Rollout{}, err
	}
	if each != nil {
		if req.Release != 0 {
			return store.Rollout{}, errcode.New(errcode.RequestMalformed, "only a job rollout gives nodes their own params").With(errcode.DetailField, "release")
		}
		nodes = slices.DeleteFunc(nodes, func(n store.Node) bool { _, ok := each[n.ID]; return !ok })
	}
	steps, stages, err := Plan(nodes, req.Selector, Staging{Stages: req.Stages, Canary: req.Canary, Percentages: req.Percentages})
	if err != nil {
		return store.Rollout{}, err
	}
	return r.create(ctx, who, req, nodes, steps, stages, fleetWide, store.PurposeNone, "", each)
}

// create checks the role and the words of a planned rollout and makes it.
func (r *Room) create(ctx context.Context, who api.Token, req api.RolloutRequest, nodes []store.Node, steps []store.RolloutStepNew,
	stages []string, fleetWide bool, purpose store.RolloutPurpose, detail string, each map[string]json.RawMessage) (store.Rollout, error) {
	var err error
	sel, _ := ParseSelector("selector", req.Selector)
	kind := store.RolloutJob
	if req.Release != 0 {
		kind = store.RolloutRelease
		if err := tokens.Need(who, api.RoleAdmin); err != nil {
			return store.Rollout{}, err
		}
		if _, err := r.c.Store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: req.Release}); err != nil {
			return store.Rollout{}, err
		}
	}
	byID := map[string]store.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	// Each word must be in the release each node will run it under: the node's target for a job
	// rollout; for a release rollout the preflight runs under the old target, the verify under the new.
	checks := []struct {
		phase, word string
		params      *json.RawMessage
		newTarget   bool
	}{{"preflight", req.Preflight, &req.PreflightParams, false}, {"change", req.Word, &req.Params, false}, {"verify", req.Verify, &req.VerifyParams, true}}
	role := api.RoleOperator
	for _, c := range checks {
		if c.word == "" {
			continue
		}
		checked := map[int64]bool{}
		for _, st := range steps {
			seq := byID[st.NodeID].TargetSequence
			if c.newTarget && kind == store.RolloutRelease {
				seq = req.Release
			}
			if checked[seq] {
				continue
			}
			checked[seq] = true
			var words map[string]releases.Word
			if seq > 0 {
				if words, _, err = r.c.Words.Words(ctx, seq); err != nil {
					return store.Rollout{}, err
				}
			}
			w, ok := words[c.word]
			if !ok {
				return store.Rollout{}, errcode.New(errcode.RolloutWordNotInRelease, "%s word %s is not in release %d, node %s's target", c.phase, c.word, seq, st.NodeName).
					With(errcode.DetailWord, c.word).With(errcode.DetailNodeID, st.NodeID).With(errcode.DetailSequence, seq)
			}
			if w.Manifest.Class == manifest.ClassDestructive {
				role = api.RoleAdmin
			}
			// The rollout keeps the params as checked ({} when none were given): its engine queues
			// each phase's jobs with them as they are.
			if *c.params, err = jobs.Params(w.Manifest, *c.params); err != nil {
				return store.Rollout{}, err
			}
		}
	}
	if err := tokens.Need(who, role); err != nil {
		return store.Rollout{}, err
	}
	if each != nil {
		if err := r.checkEach(ctx, req.Word, steps, byID, each); err != nil {
			return store.Rollout{}, err
		}
	}
	var first store.LeaseAcquireParams
	if r.c.Engine != nil {
		first = r.c.Engine.EngineLease()
	}
	ro, err := r.c.Store.RolloutCreate(ctx, store.RolloutCreateParams{
		Kind: kind, ReleaseSequence: req.Release, Word: req.Word, Params: req.Params,
		PreflightWord: req.Preflight, PreflightParams: req.PreflightParams, VerifyWord: req.Verify, VerifyParams: req.VerifyParams,
		Selector: req.Selector, Stages: stages, FleetWide: fleetWide || sel.All, MaxParallel: req.MaxParallel, ErrorBudget: req.ErrorBudget,
		StepTimeout: time.Duration(req.StepTimeoutMS) * time.Millisecond, Steps: steps, Purpose: purpose, Detail: detail,
		By: who.Name, Now: r.c.Now(), Lease: first,
	})
	if err != nil {
		return store.Rollout{}, err
	}
	r.log.Info("rollout started", "rollout", ro.ID, "kind", ro.Kind, "nodes", len(steps), "stages", len(stages), "by", who.Name)
	r.changed()
	return ro, nil
}

// checkEach holds each step's own params to the schema of the word in the node's target release, and
// puts them on the step as checked.
func (r *Room) checkEach(ctx context.Context, word string, steps []store.RolloutStepNew, byID map[string]store.Node, each map[string]json.RawMessage) error {
	catalogs := map[int64]map[string]releases.Word{}
	for i, st := range steps {
		seq := byID[st.NodeID].TargetSequence
		words, ok := catalogs[seq]
		if !ok && seq > 0 {
			var err error
			if words, _, err = r.c.Words.Words(ctx, seq); err != nil {
				return err
			}
			catalogs[seq] = words
		}
		w, ok := words[word]
		if !ok {
			return errcode.New(errcode.RolloutWordNotInRelease, "word %s is not in release %d, node %s's target", word, seq, st.NodeName).
				With(errcode.DetailWord, word).With(errcode.DetailNodeID, st.NodeID).With(errcode.DetailSequence, seq)
		}
		p, err := jobs.Params(w.Manifest, each[st.NodeID])
		if err != nil {
			return errcode.From(err, errcode.WordParamInvalid).With(errcode.DetailNodeID, st.NodeID)
		}
		steps[i].Params = p
	}
	return nil
}

// activeNodes reads every active node, page by page.
func (r *Room) activeNodes(ctx context.Context) ([]store.Node, error) {
	var all []store.Node
	cursor := ""
	for {
		res, err := r.c.Store.NodeList(ctx, store.NodeListParams{State: store.NodeActive, Limit: store.MaxListLimit, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		all = append(all, res.Nodes...)
		if res.NextCursor == "" {
			return all, nil
		}
		cursor = res.NextCursor
	}
}

// Pause stops a running rollout starting steps; those under way are still judged.
func (r *Room) Pause(ctx context.Context, who api.Token, id string) (api.Rollout, error) {
	return r.move(ctx, who, id, "pause", store.RolloutPaused, store.RolloutRunning)
}

// Resume runs a paused or halted rollout again (a halted one retries its failed nodes), so it takes the
// role starting it took.
func (r *Room) Resume(ctx context.Context, who api.Token, id string) (api.Rollout, error) {
	cur, err := r.c.Store.RolloutGet(ctx, store.RolloutGetParams{ID: id})
	if err != nil {
		return api.Rollout{}, err
	}
	role, err := r.role(ctx, cur)
	if err != nil {
		return api.Rollout{}, err
	}
	if err := tokens.Need(who, role); err != nil {
		return api.Rollout{}, err
	}
	return r.move(ctx, who, id, "resume", store.RolloutRunning, store.RolloutPaused, store.RolloutHalted)
}

func (r *Room) move(ctx context.Context, who api.Token, id, action string, to store.RolloutState, from ...store.RolloutState) (api.Rollout, error) {
	ro, err := r.c.Store.RolloutSetState(ctx, store.RolloutSetStateParams{ID: id, From: from, To: to, By: who.Name, Action: action, Now: r.c.Now()})
	if err != nil {
		return api.Rollout{}, err
	}
	r.log.Info("rollout "+action, "rollout", ro.ID, "by", who.Name, "state", ro.State)
	r.changed()
	return apiconv.Rollout(ro), nil
}

// Abort stops a rollout and leaves every node it did not reach untouched (see Abort).
func (r *Room) Abort(ctx context.Context, who api.Token, id string) (api.Rollout, error) {
	ro, err := Abort(ctx, r.c.Store, id, who.Name, r.c.Now())
	if err != nil {
		return api.Rollout{}, err
	}
	r.log.Info("rollout abort", "rollout", ro.ID, "by", who.Name, "state", ro.State)
	r.changed()
	return apiconv.Rollout(ro), nil
}

// Revert moves every node a release rollout moved back to the content it ran before (see Revert).
func (r *Room) Revert(ctx context.Context, who api.Token, id string) (api.Rollout, error) {
	ro, err := r.c.Store.RolloutGet(ctx, store.RolloutGetParams{ID: id})
	if err != nil {
		return api.Rollout{}, err
	}
	out, moved, err := Revert(ctx, r.c.Store, ro, who.Name, r.c.Now())
	if err != nil {
		return api.Rollout{}, err
	}
	r.log.Info("rollout reverted", "rollout", ro.ID, "by", who.Name, "moved", len(moved))
	a := apiconv.Rollout(out)
	a.Moved = moved
	return a, nil
}

// role is the role a rollout's changes need now: admin for a release, and for a job the role its most
// dangerous word (change, preflight or verify) needs in the target release of any of its nodes, as a
// start checks.
func (r *Room) role(ctx context.Context, ro store.Rollout) (api.Role, error) {
	if ro.Kind == store.RolloutRelease {
		return api.RoleAdmin, nil
	}
	seen := map[int64]bool{}
	for _, st := range ro.Steps {
		n, err := r.c.Store.NodeGet(ctx, store.NodeGetParams{ID: st.NodeID})
		if errcode.Has(err, errcode.NodeNotFound) {
			continue
		}
		if err != nil {
			return "", err
		}
		if seen[n.TargetSequence] || n.TargetSequence == 0 {
			continue
		}
		seen[n.TargetSequence] = true
		words, _, err := r.c.Words.Words(ctx, n.TargetSequence)
		if err != nil {
			return "", err
		}
		for _, name := range []string{ro.Word, ro.PreflightWord, ro.VerifyWord} {
			if w, ok := words[name]; ok && w.Manifest.Class == manifest.ClassDestructive {
				return api.RoleAdmin, nil
			}
		}
	}
	return api.RoleOperator, nil
}
