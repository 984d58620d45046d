package roles

import (
	"context"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/internal/security"
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
	f, err := r.loadRoles(ctx)
	if err != nil {
		return nil, err
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

// loadRoles reads the roles and their assignments, not the nodes.
func (r *Room) loadRoles(ctx context.Context) (*fleet, error) {
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
	return f, nil
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

// ServedBy reads the roles and their assignments and answers what a node serves: the packages present
// and the units kept enabled or started in the footprint its roles render, each with the roles that
// name it; the fleet security view counts them critical on that node. With no assignment it answers
// nil after one read. The caller hands it the nodes (the security view has them from its own query,
// with the labels and facts a selector matches): reading the fleet here again cost more than the rest
// of the view. A node whose roles conflict serves what each of its roles names: the conflict is
// refused where it is made and shown on the node's footprint, and must not hide from the security view
// what the node was told to run. Each distinct set of roles is worked out once; the answer is for
// one caller at a time.
func (r *Room) ServedBy(ctx context.Context) (security.Serving, error) {
	as, err := r.c.Store.RoleAssignmentList(ctx, store.RoleAssignmentListParams{})
	if err != nil || len(as) == 0 {
		return nil, err
	}
	f, err := r.loadRoles(ctx)
	if err != nil {
		return nil, err
	}
	bySet := map[string]security.Served{}
	return func(n store.Node) security.Served {
		names := f.rolesOf(n)
		if len(names) == 0 {
			return security.Served{}
		}
		key := strings.Join(names, ",")
		s, ok := bySet[key]
		if !ok {
			s = f.served(names)
			bySet[key] = s
		}
		return s
	}, nil
}

var _ security.Roles = (*Room)(nil)

// served is what a set of roles serves (nodes carrying the same set share the answer, read only): the
// union of what each role keeps present, enabled or started. Where the roles render, that is exactly
// the rendered footprint's (Render merges items claimed alike and refuses the rest), and naming each
// role comes with it; where they conflict, it is still what the node was told to run.
func (f *fleet) served(names []string) security.Served {
	s := security.Served{Packages: map[string][]string{}, Units: map[string][]string{}}
	for _, name := range names {
		spec, ok := f.specs[name]
		if !ok || spec.Footprint == nil {
			continue
		}
		for _, p := range spec.Footprint.Packages {
			if p.State == footprint.StatePresent && !slices.Contains(s.Packages[p.Name], name) {
				s.Packages[p.Name] = append(s.Packages[p.Name], name)
			}
		}
		for _, u := range spec.Footprint.Units {
			if (u.Enabled || u.Started) && !slices.Contains(s.Units[u.Name], name) {
				s.Units[u.Name] = append(s.Units[u.Name], name)
			}
		}
	}
	return s
}
