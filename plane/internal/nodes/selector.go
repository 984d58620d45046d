package nodes

import (
	"errors"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Selector picks nodes; it is the one grammar of rollouts' selectors and stages and of the node
// list's --where. A selector is terms joined by commas, every term holding:
//
//	""  or  all           every node
//	web-1,web-2           nodes by name (names are not mixed with the other terms)
//	role=web              a label
//	fact.os=debian-12     a host fact the node reported (channel.FactKeys; fact.address=IP matches any
//	                      of its addresses)
//
// Names and labels are not mixed in one selector: "web-1,role=web" would read as either.
type Selector struct {
	All    bool
	Names  []string
	Labels map[string]string
	Facts  map[string]string
}

// FactPrefix marks a term that names a host fact rather than a label.
const FactPrefix = "fact."

// ParseSelector parses a selector; field names it in errors, which are node.filter_invalid.
func ParseSelector(field, s string) (Selector, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return Selector{All: true}, nil
	}
	bad := func(format string, args ...any) (Selector, error) {
		return Selector{}, errcode.New(errcode.NodeFilterInvalid, format, args...).With(errcode.DetailField, field)
	}
	var sel Selector
	put := func(m *map[string]string, what, k, v string) error {
		if *m == nil {
			*m = map[string]string{}
		}
		if w, dup := (*m)[k]; dup && w != v {
			_, err := bad("%s asks for %s%s=%s and %s=%s: no node matches both", field, what, k, w, k, v)
			return err
		}
		(*m)[k] = v
		return nil
	}
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		k, v, isPair := strings.Cut(term, "=")
		switch {
		case term == "":
			return bad("%s %q has an empty term", field, s)
		case isPair && strings.HasPrefix(k, FactPrefix):
			fact := strings.TrimPrefix(k, FactPrefix)
			if !slices.Contains(channel.FactKeys, fact) {
				return bad("%s term %q names no fact; facts are %s", field, term, strings.Join(channel.FactKeys, ", "))
			}
			if v == "" || len(v) > channel.MaxFactText || strings.ContainsAny(v, ",=") {
				return bad("%s term %q needs a value of 1 to %d bytes without ',' or '='", field, term, channel.MaxFactText)
			}
			if err := put(&sel.Facts, FactPrefix, fact, v); err != nil {
				return Selector{}, err
			}
		case isPair:
			if !store.ValidLabelKey(k) || !store.ValidLabelValue(v) {
				return bad("%s term %q is not key=value (keys: a-z 0-9 - _ . /; values without spaces, ',' or '=')", field, term)
			}
			if err := put(&sel.Labels, "", k, v); err != nil {
				return Selector{}, err
			}
		default:
			if !store.ValidNodeName(term) {
				return bad("%s term %q is neither a node name nor key=value", field, term)
			}
			sel.Names = append(sel.Names, term)
		}
	}
	if len(sel.Names) > 0 && (len(sel.Labels) > 0 || len(sel.Facts) > 0) {
		return bad("%s mixes node names and labels or facts; use one or the other", field)
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
	for k, v := range s.Facts {
		if !n.Facts.Has(k, v) {
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

// ParseSelectorAs is ParseSelector answering a bad selector with code: a batch's or a rollout's caller
// reads its own area's codes.
func ParseSelectorAs(code, field, s string) (Selector, error) {
	sel, err := ParseSelector(field, s)
	if e := (*errcode.Error)(nil); errors.As(err, &e) && e.Code == errcode.NodeFilterInvalid {
		out := *e
		out.Code = code
		return sel, &out
	}
	return sel, err
}
