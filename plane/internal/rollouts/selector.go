package rollouts

import (
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Selector is the nodes room's: one grammar for rollouts, batches and the node list.
type Selector = nodes.Selector

// ParseSelector parses a rollout's selector or stage (rollout.selector_invalid); field names it in
// errors.
func ParseSelector(field, s string) (Selector, error) {
	return nodes.ParseSelectorAs(errcode.RolloutSelectorInvalid, field, s)
}
