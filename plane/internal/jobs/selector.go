package jobs

import (
	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Selector is the nodes room's: one grammar for batches, rollouts and the node list.
type Selector = nodes.Selector

// ParseSelector parses a batch's selector; field names it in errors (job.selector_invalid).
func ParseSelector(field, s string) (Selector, error) {
	return nodes.ParseSelectorAs(errcode.JobSelectorInvalid, field, s)
}
