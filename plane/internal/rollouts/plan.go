package rollouts

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Staging is how a selection is split into stages: explicit stage selectors, or a canary count
// followed by cumulative percentages. Neither: one stage of every selected node.
type Staging struct {
	Stages      []string // selectors, one stage each; a node is in the first stage that matches it
	Canary      int      // the first stage's size
	Percentages []string // "10%", "50%", "100%": how much of the selection has been reached by each stage's end
}

// Plan selects active nodes and places each in a stage. Refused: rollout.selector_invalid,
// rollout.selector_unknown_key, rollout.empty_selection, rollout.stages_incomplete.
func Plan(nodes []store.Node, selector string, st Staging) ([]store.RolloutStepNew, []string, error) {
	sel, err := ParseSelector("selector", selector)
	if err != nil {
		return nil, nil, err
	}
	active := slices.DeleteFunc(slices.Clone(nodes), func(n store.Node) bool { return n.State != store.NodeActive })
	if k := unknownKey(sel, active); k != "" {
		return nil, nil, errcode.New(errcode.RolloutSelectorUnknownKey, "no node carries the label %q (lexicon nodes label NODE %s=...)", k, k).
			With(errcode.DetailLabel, k)
	}
	var chosen []store.Node
	for _, n := range active {
		if sel.Match(n) {
			chosen = append(chosen, n)
		}
	}
	for _, name := range sel.Names {
		if !slices.ContainsFunc(chosen, func(n store.Node) bool { return n.Name == name }) {
			return nil, nil, errcode.New(errcode.RolloutEmptySelection, "no active node is named %s", name).With(errcode.DetailName, name)
		}
	}
	if len(chosen) == 0 {
		return nil, nil, errcode.New(errcode.RolloutEmptySelection, "selector %q matches no active node", selector)
	}
	slices.SortFunc(chosen, func(a, b store.Node) int { return strings.Compare(a.Name, b.Name) })
	if len(st.Stages) > 0 && (st.Canary > 0 || len(st.Percentages) > 0) {
		return nil, nil, errcode.New(errcode.RolloutSelectorInvalid, "give explicit stages or a canary with percentages, not both").With(errcode.DetailField, "stages")
	}
	switch {
	case len(st.Stages) > 0:
		return explicit(chosen, st.Stages)
	case st.Canary > 0 || len(st.Percentages) > 0:
		return percentages(chosen, st.Canary, st.Percentages)
	}
	steps := make([]store.RolloutStepNew, len(chosen))
	for i, n := range chosen {
		steps[i] = store.RolloutStepNew{NodeID: n.ID, NodeName: n.Name}
	}
	return steps, []string{"all"}, nil
}

func explicit(chosen []store.Node, stages []string) ([]store.RolloutStepNew, []string, error) {
	sels := make([]Selector, len(stages))
	for i, s := range stages {
		var err error
		if sels[i], err = ParseSelector(fmt.Sprintf("stage %d", i+1), s); err != nil {
			return nil, nil, err
		}
		if k := unknownKey(sels[i], chosen); k != "" {
			return nil, nil, errcode.New(errcode.RolloutSelectorUnknownKey, "stage %d: no selected node carries the label %q", i+1, k).
				With(errcode.DetailLabel, k).With(errcode.DetailStage, i+1)
		}
	}
	var steps []store.RolloutStepNew
	for _, n := range chosen {
		stage := slices.IndexFunc(sels, func(s Selector) bool { return s.Match(n) })
		if stage < 0 {
			return nil, nil, errcode.New(errcode.RolloutStagesIncomplete, "no stage holds node %s, which the selector chose", n.Name).
				With(errcode.DetailNodeID, n.ID).With(errcode.DetailName, n.Name)
		}
		steps = append(steps, store.RolloutStepNew{NodeID: n.ID, NodeName: n.Name, Stage: stage})
	}
	return steps, slices.Clone(stages), nil
}

func percentages(chosen []store.Node, canary int, pcts []string) ([]store.RolloutStepNew, []string, error) {
	if canary < 0 {
		return nil, nil, errcode.New(errcode.RolloutSelectorInvalid, "canary must not be negative").With(errcode.DetailField, "canary")
	}
	if len(pcts) == 0 {
		pcts = []string{"100%"}
	}
	var ends []int // cumulative node counts at each stage's end
	var desc []string
	if canary > 0 {
		ends, desc = append(ends, min(canary, len(chosen))), append(desc, fmt.Sprintf("canary %d", canary))
	}
	last := 0
	for _, p := range pcts {
		v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(p), "%"))
		if err != nil || !strings.HasSuffix(strings.TrimSpace(p), "%") || v <= last || v > 100 {
			return nil, nil, errcode.New(errcode.RolloutSelectorInvalid, "stages are rising percentages up to 100%%, like 10%%,50%%,100%%; %q is not", p).
				With(errcode.DetailField, "stages")
		}
		last = v
		ends, desc = append(ends, (len(chosen)*v+99)/100), append(desc, strings.TrimSpace(p))
	}
	if last != 100 {
		return nil, nil, errcode.New(errcode.RolloutStagesIncomplete, "the last stage is %d%%: the stages must reach 100%% of the selection", last)
	}
	steps := make([]store.RolloutStepNew, len(chosen))
	stage := 0
	for i, n := range chosen {
		for stage < len(ends)-1 && i >= ends[stage] {
			stage++
		}
		steps[i] = store.RolloutStepNew{NodeID: n.ID, NodeName: n.Name, Stage: stage}
	}
	return steps, desc, nil
}
