package rollouts

import (
	"errors"
	"slices"

	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Selector is the nodes room's: one grammar for rollouts and the node list (nodes.Selector).
type Selector = nodes.Selector

// ParseSelector parses a rollout's selector or stage with the nodes room's grammar, answering a bad
// one as rollout.selector_invalid: a rollout's caller reads the rollout's codes.
func ParseSelector(field, s string) (Selector, error) {
	sel, err := nodes.ParseSelector(field, s)
	if e := (*errcode.Error)(nil); errors.As(err, &e) && e.Code == errcode.NodeFilterInvalid {
		out := *e
		out.Code = errcode.RolloutSelectorInvalid
		return sel, &out
	}
	return sel, err
}

// unknownKey returns a label key of s that no node carries, or "".
func unknownKey(s Selector, list []store.Node) string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.ContainsFunc(list, func(n store.Node) bool { _, ok := n.Labels[k]; return ok }) {
			return k
		}
	}
	return ""
}
