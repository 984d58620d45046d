package nodes

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// List lists nodes, narrowed by the query, each with how many agent releases it is behind. The
// store's own filters (state, label, word, version) page by the store's cursor in enrolment order; a
// Where, Search or Sort is applied here, over every node the store's filters leave, and pages by
// an offset (see RATIONALE: "Finding nodes").
func (r *Room) List(ctx context.Context, who api.Token, q api.NodesListQuery) (api.NodeList, error) {
	filter := store.NodeFilter{Word: q.Word, AgentVersion: q.Version}
	if q.Label != "" {
		k, v, ok := strings.Cut(q.Label, "=")
		if !ok {
			return api.NodeList{}, errcode.New(errcode.RequestMalformed, "label is key=value, not %q", q.Label).With(errcode.DetailField, "label")
		}
		if err := CheckLabels(nil, []string{k}); err != nil {
			return api.NodeList{}, err
		}
		filter.LabelKey, filter.LabelValue = k, v
	}
	var out api.NodeList
	if q.Where == "" && q.Search == "" && q.Sort == "" {
		res, err := r.c.Store.NodeList(ctx, store.NodeListParams{State: store.NodeState(q.State), Limit: q.Limit, Cursor: q.Cursor, Filter: filter})
		if err != nil {
			return api.NodeList{}, err
		}
		out = api.NodeList{Nodes: apiconv.Each(res.Nodes, apiconv.Node), NextCursor: res.NextCursor}
	} else {
		list, next, err := r.sift(ctx, q, filter)
		if err != nil {
			return api.NodeList{}, err
		}
		out = api.NodeList{Nodes: apiconv.Each(list, apiconv.Node), NextCursor: next}
	}
	agents, err := r.c.Releases.AgentVersions(ctx)
	if err != nil {
		return api.NodeList{}, err
	}
	for i := range out.Nodes {
		out.Nodes[i].ReleasesBehind = behind(agents, out.Nodes[i].AgentVersion)
		r.updating(ctx, &out.Nodes[i])
	}
	return out, nil
}

// offsetPrefix marks the cursor of a sifted list: the offset of its next page.
const offsetPrefix = "at:"

// sift reads every node the store's filters leave, keeps those the selector and search match, sorts
// them and answers one page and the cursor of the next.
func (r *Room) sift(ctx context.Context, q api.NodesListQuery, filter store.NodeFilter) ([]store.Node, string, error) {
	sel, err := ParseSelector("where", q.Where)
	if err != nil {
		return nil, "", err
	}
	search, err := ParseSearch(q.Search)
	if err != nil {
		return nil, "", err
	}
	less, err := sortBy(q.Sort)
	if err != nil {
		return nil, "", err
	}
	limit := q.Limit
	switch {
	case limit == 0:
		limit = 100
	case limit < 0 || limit > store.MaxListLimit:
		return nil, "", errcode.New(errcode.NodeFilterInvalid, "limit %d is outside 1..%d", limit, store.MaxListLimit).With(errcode.DetailField, "limit")
	}
	offset := 0
	if q.Cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(q.Cursor, offsetPrefix))
		if !strings.HasPrefix(q.Cursor, offsetPrefix) || err != nil || n < 0 {
			return nil, "", errcode.New(errcode.NodeFilterInvalid, "cursor %q is not one this list handed out", q.Cursor).With(errcode.DetailField, "cursor")
		}
		offset = n
	}
	var kept []store.Node
	cursor := ""
	for {
		res, err := r.c.Store.NodeList(ctx, store.NodeListParams{State: store.NodeState(q.State), Limit: store.MaxListLimit, Cursor: cursor, Filter: filter})
		if err != nil {
			return nil, "", err
		}
		for _, n := range res.Nodes {
			if sel.Match(n) && search.Match(n) {
				kept = append(kept, n)
			}
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	slices.SortStableFunc(kept, less)
	if offset >= len(kept) {
		return nil, "", nil
	}
	page := kept[offset:min(offset+limit, len(kept))]
	next := ""
	if offset+limit < len(kept) {
		next = offsetPrefix + strconv.Itoa(offset+limit)
	}
	return page, next, nil
}

// sortBy answers the order a sort key names; the store's enrolment order (by id) breaks ties.
func sortBy(key string) (func(a, b store.Node) int, error) {
	desc := strings.HasPrefix(key, "-")
	var by func(a, b store.Node) int
	switch strings.TrimPrefix(key, "-") {
	case "", "created":
		by = func(a, b store.Node) int { return 0 }
	case "name":
		by = func(a, b store.Node) int { return strings.Compare(a.Name, b.Name) }
	case "seen":
		by = func(a, b store.Node) int { return a.LastSeenAt.Compare(b.LastSeenAt) }
	case "version":
		by = func(a, b store.Node) int { return strings.Compare(a.AgentVersion, b.AgentVersion) }
	default:
		return nil, errcode.New(errcode.NodeFilterInvalid, "sort %q is not one of %s (a leading - sorts descending)", key, strings.Join(api.NodeSorts, ", ")).
			With(errcode.DetailField, "sort")
	}
	return func(a, b store.Node) int {
		c := by(a, b)
		if desc {
			c = -c
		}
		return cmp.Or(c, strings.Compare(a.ID, b.ID))
	}, nil
}

// Search is words a node must each match: a word with '=' a label or a fact exactly, any other a
// part of the node's name, id, addresses, labels or facts, in any case.
type Search []string

// MaxSearch bounds a search's text.
const MaxSearch = 512

// ParseSearch splits a search into its words. Refused: node.filter_invalid (too long).
func ParseSearch(s string) (Search, error) {
	if len(s) > MaxSearch {
		return nil, errcode.New(errcode.NodeFilterInvalid, "a search is at most %d bytes", MaxSearch).With(errcode.DetailField, "q")
	}
	return Search(strings.Fields(strings.ToLower(s))), nil
}

// Match reports whether n matches every word.
func (s Search) Match(n store.Node) bool {
	for _, w := range s {
		if !matchWord(n, w) {
			return false
		}
	}
	return true
}

func matchWord(n store.Node, w string) bool {
	if k, v, ok := strings.Cut(w, "="); ok {
		if lv, has := n.Labels[k]; has && strings.EqualFold(lv, v) {
			return true
		}
		if fv, isFact := n.Facts.Fact(k); isFact {
			return strings.EqualFold(fv, v)
		}
		return k == "address" && (slices.Contains(n.Addresses, v) || n.Facts.Has("address", v))
	}
	texts := []string{n.Name, n.ID}
	texts = append(texts, n.Addresses...)
	texts = append(texts, n.Facts.Addresses...)
	for k, v := range n.Labels {
		texts = append(texts, k+"="+v)
	}
	for _, k := range channel.FactKeys {
		if v, _ := n.Facts.Fact(k); v != "" {
			texts = append(texts, v)
		}
	}
	return slices.ContainsFunc(texts, func(t string) bool { return strings.Contains(strings.ToLower(t), w) })
}
