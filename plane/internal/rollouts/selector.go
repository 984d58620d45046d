// Package rollouts plans and runs staged rollouts: a release or a job reaching a selection of nodes
// stage by stage, each node under its change lease, halting on the first miss. The plan (selectors,
// stages, checks against the target release) is made when a rollout starts; the Engine advances every
// running rollout from its store record, on every replica at once, safely.
package rollouts

import (
	"github.com/lexicon-fleet/lexicon/plane/internal/jobs"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Selector picks the nodes of a rollout and of each stage: the forms a batch takes too.
type Selector = jobs.Selector

// ParseSelector parses a rollout's selector (rollout.selector_invalid); field names it in errors.
func ParseSelector(field, s string) (Selector, error) {
	sel, err := jobs.ParseSelector(field, s)
	if err != nil {
		// The same refusal, in the rollout's own area.
		return Selector{}, errcode.New(errcode.RolloutSelectorInvalid, "%s", errcode.From(err, errcode.RolloutSelectorInvalid).Message).
			With(errcode.DetailField, field)
	}
	return sel, nil
}
