package roles

import (
	"context"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// fleet is what assignments, edits, plans and applies are judged on: every role's newest spec, the
// assignments, and the active nodes. Footprints are rendered once per distinct set of roles, so a
// fleet of many nodes carrying few combinations costs few renders.
type fleet struct {
	specs    map[string]Spec
	assigns  []assignment
	nodes    []store.Node
	rendered map[string]rendered
}

type assignment struct {
	role string
	sel  rollouts.Selector
}

type rendered struct {
	fp  *footprint.Footprint
	err error
}

// load reads the fleet. An assignment whose selector no longer parses picks no node.
func (r *Room) load(ctx context.Context) (*fleet, error) {
	f := &fleet{specs: map[string]Spec{}, rendered: map[string]rendered{}}
	vs, err := r.c.Store.RoleList(ctx, store.RoleListParams{})
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		s, err := decodeSpec(v)
		if err != nil {
			return nil, err
		}
		f.specs[v.Name] = s
	}
	as, err := r.c.Store.RoleAssignmentList(ctx, store.RoleAssignmentListParams{})
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		if sel, err := rollouts.ParseSelector("selector", a.Selector); err == nil {
			f.assigns = append(f.assigns, assignment{a.Role, sel})
		}
	}
	cursor := ""
	for {
		res, err := r.c.Store.NodeList(ctx, store.NodeListParams{State: store.NodeActive, Limit: store.MaxListLimit, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		f.nodes = append(f.nodes, res.Nodes...)
		if res.NextCursor == "" {
			return f, nil
		}
		cursor = res.NextCursor
	}
}

// rolesOf names the roles n carries, sorted.
func (f *fleet) rolesOf(n store.Node) []string {
	var out []string
	for _, a := range f.assigns {
		if a.sel.Match(n) && !slices.Contains(out, a.role) {
			out = append(out, a.role)
		}
	}
	slices.Sort(out)
	return out
}

// carrying lists the active nodes that carry role name.
func (f *fleet) carrying(name string) []store.Node {
	var out []store.Node
	for _, n := range f.nodes {
		if slices.Contains(f.rolesOf(n), name) {
			out = append(out, n)
		}
	}
	return out
}

// render is the footprint of a set of roles, rendered once per set.
func (f *fleet) render(names []string) (*footprint.Footprint, error) {
	key := strings.Join(names, ",")
	if r, ok := f.rendered[key]; ok {
		return r.fp, r.err
	}
	specs := make([]Spec, 0, len(names))
	for _, n := range names {
		if s, ok := f.specs[n]; ok {
			specs = append(specs, s)
		}
	}
	fp, err := Render(specs)
	f.rendered[key] = rendered{fp, err}
	return fp, err
}

// check renders the footprint of each node and refuses the first conflict, naming a node that would
// carry it.
func (f *fleet) check(nodes []store.Node) error {
	for _, n := range nodes {
		if _, err := f.render(f.rolesOf(n)); err != nil {
			return errcode.From(err, errcode.RoleConflict).With(errcode.DetailNodeID, n.ID)
		}
	}
	return nil
}
