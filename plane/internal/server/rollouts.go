package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func (s *Server) rolloutRoutes(r chi.Router) {
	s.handle(r, api.NodesLabel, s.nodeLabel)
	s.handle(r, api.RolloutsStart, s.rolloutStart)
	s.handle(r, api.RolloutsList, func(r *http.Request) (any, error) {
		q, err := api.ParseRolloutsListQuery(r.URL.Query())
		if err != nil {
			return nil, err
		}
		list, err := s.store.RolloutList(r.Context(), store.RolloutListParams{State: store.RolloutState(q.State), Limit: q.Limit})
		return api.RolloutList{Rollouts: apiconv.Each(list, apiconv.Rollout)}, err
	})
	s.handle(r, api.RolloutsShow, func(r *http.Request) (any, error) {
		ro, err := s.store.RolloutGet(r.Context(), store.RolloutGetParams{ID: chi.URLParam(r, "id")})
		return apiconv.Rollout(ro), err
	})
	move := func(rt api.Route, action string, to store.RolloutState, from ...store.RolloutState) {
		s.handle(r, rt, func(r *http.Request) (any, error) {
			who := tokenFrom(r.Context()).Name
			if to == store.RolloutRunning {
				// Resuming starts changes again (a halted rollout retries its failed nodes), so it
				// takes the role starting the rollout took; stopping one never needs more than operator.
				cur, err := s.store.RolloutGet(r.Context(), store.RolloutGetParams{ID: chi.URLParam(r, "id")})
				if err != nil {
					return nil, err
				}
				role, err := s.rolloutRole(r.Context(), cur)
				if err != nil {
					return nil, err
				}
				if err := need(r.Context(), role); err != nil {
					return nil, err
				}
			}
			ro, err := s.store.RolloutSetState(r.Context(), store.RolloutSetStateParams{ID: chi.URLParam(r, "id"), From: from, To: to,
				By: who, Action: action, Now: s.now()})
			if err != nil {
				return nil, err
			}
			s.log.Info("rollout "+action, "rollout", ro.ID, "by", who, "state", ro.State)
			s.rolloutsChanged()
			return apiconv.Rollout(ro), nil
		})
	}
	move(api.RolloutsPause, "pause", store.RolloutPaused, store.RolloutRunning)
	move(api.RolloutsResume, "resume", store.RolloutRunning, store.RolloutPaused, store.RolloutHalted)
	s.handle(r, api.RolloutsAbort, func(r *http.Request) (any, error) {
		who := tokenFrom(r.Context()).Name
		ro, err := rollouts.Abort(r.Context(), s.store, chi.URLParam(r, "id"), who, s.now())
		if err != nil {
			return nil, err
		}
		s.log.Info("rollout abort", "rollout", ro.ID, "by", who, "state", ro.State)
		s.rolloutsChanged()
		return apiconv.Rollout(ro), nil
	})
	s.handle(r, api.RolloutsRevert, func(r *http.Request) (any, error) {
		ro, err := s.store.RolloutGet(r.Context(), store.RolloutGetParams{ID: chi.URLParam(r, "id")})
		if err != nil {
			return nil, err
		}
		who := tokenFrom(r.Context()).Name
		out, moved, err := rollouts.Revert(r.Context(), s.store, ro, who, s.now())
		if err != nil {
			return nil, err
		}
		s.log.Info("rollout reverted", "rollout", ro.ID, "by", who, "moved", len(moved))
		a := apiconv.Rollout(out)
		a.Moved = moved
		return a, nil
	})
}

// rolloutRole is the role a rollout's changes need now: admin for a release, and for a job the role
// its most dangerous word (change, preflight or verify) needs in the target release of any of its
// nodes, as a start checks.
func (s *Server) rolloutRole(ctx context.Context, ro store.Rollout) (api.Role, error) {
	if ro.Kind == store.RolloutRelease {
		return api.RoleAdmin, nil
	}
	seen := map[int64]bool{}
	for _, st := range ro.Steps {
		n, err := s.store.NodeGet(ctx, store.NodeGetParams{ID: st.NodeID})
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
		words, _, err := s.catalog.Words(ctx, n.TargetSequence)
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

func (s *Server) rolloutsChanged() {
	if s.cfg.RolloutsChanged != nil {
		s.cfg.RolloutsChanged()
	}
}

func (s *Server) nodeLabel(r *http.Request) (any, error) {
	var req api.LabelRequest
	if err := readJSON(r, 16<<10, &req); err != nil {
		return nil, err
	}
	n, err := s.nodeByRef(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return nil, err
	}
	who := tokenFrom(r.Context()).Name
	n, err = s.store.NodeLabel(r.Context(), store.NodeLabelParams{ID: n.ID, Set: req.Set, Remove: req.Remove, By: who, Now: s.now()})
	if err != nil {
		return nil, err
	}
	s.log.Info("node labelled", "node", n.ID, "name", n.Name, "labels", n.Labels, "by", who)
	return apiconv.Node(n), nil
}

// activeNodes reads every active node, page by page.
func (s *Server) activeNodes(ctx context.Context) ([]store.Node, error) {
	var all []store.Node
	cursor := ""
	for {
		res, err := s.store.NodeList(ctx, store.NodeListParams{State: store.NodeActive, Limit: store.MaxListLimit, Cursor: cursor})
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

// rolloutStart checks everything a rollout will need before it makes one: the selection and its
// stages, the role the change needs, and for each selected node that every word the rollout runs is in
// the node's target release with params its schema accepts. A refused start makes nothing.
func (s *Server) rolloutStart(r *http.Request) (any, error) {
	ctx := r.Context()
	var req api.RolloutRequest
	if err := readJSON(r, 256<<10, &req); err != nil {
		return nil, err
	}
	ro, err := s.startRollout(ctx, req, false)
	if err != nil {
		return nil, err
	}
	return apiconv.Rollout(ro), nil
}

func (s *Server) startRollout(ctx context.Context, req api.RolloutRequest, fleetWide bool) (store.Rollout, error) {
	if (req.Release == 0) == (req.Word == "") {
		return store.Rollout{}, errcode.New(errcode.RequestMalformed, "a rollout takes a release or a word, one of the two").With(errcode.DetailField, "word")
	}
	if req.MaxParallel < 0 || req.ErrorBudget < 0 || req.StepTimeoutMS < 0 || req.Canary < 0 {
		return store.Rollout{}, errcode.New(errcode.RequestMalformed, "max_parallel, error_budget, step_timeout_ms and canary must not be negative").With(errcode.DetailField, "max_parallel")
	}
	nodes, err := s.activeNodes(ctx)
	if err != nil {
		return store.Rollout{}, err
	}
	steps, stages, err := rollouts.Plan(nodes, req.Selector, rollouts.Staging{Stages: req.Stages, Canary: req.Canary, Percentages: req.Percentages})
	if err != nil {
		return store.Rollout{}, err
	}
	sel, _ := rollouts.ParseSelector("selector", req.Selector)
	kind := store.RolloutJob
	if req.Release != 0 {
		kind = store.RolloutRelease
		if err := need(ctx, api.RoleAdmin); err != nil {
			return store.Rollout{}, err
		}
		if _, err := s.store.ReleaseGet(ctx, store.ReleaseGetParams{Sequence: req.Release}); err != nil {
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
		params      json.RawMessage
		newTarget   bool
	}{{"preflight", req.Preflight, req.PreflightParams, false}, {"change", req.Word, req.Params, false}, {"verify", req.Verify, req.VerifyParams, true}}
	role := api.RoleOperator
	for _, c := range checks {
		if c.word == "" {
			continue
		}
		params := c.params
		if len(params) == 0 {
			params = json.RawMessage(`{}`)
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
			var words map[string]rollouts.Word
			if seq > 0 {
				if words, _, err = s.catalog.Words(ctx, seq); err != nil {
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
			if err := w.Manifest.CheckParams(params); err != nil {
				return store.Rollout{}, err
			}
		}
	}
	if err := need(ctx, role); err != nil {
		return store.Rollout{}, err
	}
	who := tokenFrom(ctx).Name
	ro, err := s.store.RolloutCreate(ctx, store.RolloutCreateParams{
		Kind: kind, ReleaseSequence: req.Release, Word: req.Word, Params: req.Params,
		PreflightWord: req.Preflight, PreflightParams: req.PreflightParams, VerifyWord: req.Verify, VerifyParams: req.VerifyParams,
		Selector: req.Selector, Stages: stages, FleetWide: fleetWide || sel.All, MaxParallel: req.MaxParallel, ErrorBudget: req.ErrorBudget,
		StepTimeout: time.Duration(req.StepTimeoutMS) * time.Millisecond, Steps: steps, By: who, Now: s.now(),
	})
	if err != nil {
		return store.Rollout{}, err
	}
	s.log.Info("rollout started", "rollout", ro.ID, "kind", ro.Kind, "nodes", len(steps), "stages", len(stages), "by", who)
	s.rolloutsChanged()
	return ro, nil
}
