package jobs

import (
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Selector picks nodes: every active node ("" or "all"), nodes by name ("web-1,web-2"), or nodes
// carrying every one of some labels ("role=web,zone=a"). Names and labels are not mixed in one
// selector: "web-1,role=web" would read as either. Batches and rollouts take the same forms.
type Selector struct {
	All    bool
	Names  []string
	Labels map[string]string
}

// ParseSelector parses a selector; field names it in errors (job.selector_invalid).
func ParseSelector(field, s string) (Selector, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return Selector{All: true}, nil
	}
	bad := func(format string, args ...any) (Selector, error) {
		return Selector{}, errcode.New(errcode.JobSelectorInvalid, format, args...).With(errcode.DetailField, field)
	}
	var sel Selector
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		k, v, isLabel := strings.Cut(term, "=")
		switch {
		case term == "":
			return bad("%s %q has an empty term", field, s)
		case isLabel:
			if !store.ValidLabelKey(k) || !store.ValidLabelValue(v) {
				return bad("%s term %q is not key=value (keys: a-z 0-9 - _ . /; values without spaces, ',' or '=')", field, term)
			}
			if sel.Labels == nil {
				sel.Labels = map[string]string{}
			}
			if w, dup := sel.Labels[k]; dup && w != v {
				return bad("%s asks for %s=%s and %s=%s: no node matches both", field, k, w, k, v)
			}
			sel.Labels[k] = v
		default:
			if !store.ValidNodeName(term) {
				return bad("%s term %q is neither a node name nor key=value", field, term)
			}
			sel.Names = append(sel.Names, term)
		}
	}
	if len(sel.Names) > 0 && len(sel.Labels) > 0 {
		return bad("%s mixes node names and labels; use one or the other", field)
	}
	return sel, nil
}

// Match reports whether n is selected.
func (s Selector) Match(n store.Node) bool {
	switch {
	case s.All:
		return true
	case len(s.Names) > 0:
		return slices.Contains(s.Names, n.Name)
	}
	for k, v := range s.Labels {
		if n.Labels[k] != v {
			return false
		}
	}
	return true
}

// UnknownKey returns a label key of s that no node carries, or "": most likely a typo.
func (s Selector) UnknownKey(nodes []store.Node) string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.ContainsFunc(nodes, func(n store.Node) bool { _, ok := n.Labels[k]; return ok }) {
			return k
		}
	}
	return ""
}
