package roles

import (
	"cmp"
	"reflect"
	"slices"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// Render is a node's footprint: the merge of the footprints of the roles it carries, taken in name
// order so that the same roles always render the same bytes. An item two roles claim alike is carried
// once, enforced when either role enforces; claimed differently (another content, mode or owner for a
// path, a package present in one and absent in the other, a user with another shell), it is
// role.conflict naming the item and both roles. The firewall is one item whose rules add up: two
// roles may each open their ports, but one cannot remove the table the other fills. It is a pure
// function of its input.
func Render(specs []Spec) (*footprint.Footprint, error) {
	specs = slices.Clone(specs)
	slices.SortFunc(specs, func(a, b Spec) int { return cmp.Compare(a.Name, b.Name) })
	out := &footprint.Footprint{Schema: footprint.SchemaName}
	m := merger{claims: make(map[string]map[string]claim, 7)}
	var fwOwner string
	for _, s := range specs {
		fp := s.Footprint
		if fp == nil {
			continue
		}
		var err error
		if out.Groups, err = merge(&m, s, out.Groups, fp.Groups, footprint.KindGroup,
			func(g footprint.Group) string { return g.Name }, func(g *footprint.Group) *bool { return &g.Enforce }); err != nil {
			return nil, err
		}
		if out.Users, err = merge(&m, s, out.Users, fp.Users, footprint.KindUser,
			func(u footprint.User) string { return u.Name }, func(u *footprint.User) *bool { return &u.Enforce }); err != nil {
			return nil, err
		}
		if out.Packages, err = merge(&m, s, out.Packages, fp.Packages, footprint.KindPackage,
			func(p footprint.Package) string { return p.Name }, func(p *footprint.Package) *bool { return &p.Enforce }); err != nil {
			return nil, err
		}
		if out.Files, err = merge(&m, s, out.Files, fp.Files, footprint.KindFile,
			func(f footprint.File) string { return f.Path }, func(f *footprint.File) *bool { return &f.Enforce }); err != nil {
			return nil, err
		}
		if out.Sysctl, err = merge(&m, s, out.Sysctl, fp.Sysctl, footprint.KindSysctl,
			func(k footprint.Sysctl) string { return k.Key }, func(k *footprint.Sysctl) *bool { return &k.Enforce }); err != nil {
			return nil, err
		}
		if out.Units, err = merge(&m, s, out.Units, fp.Units, footprint.KindUnit,
			func(u footprint.Unit) string { return u.Name }, func(u *footprint.Unit) *bool { return &u.Enforce }); err != nil {
			return nil, err
		}
		if fw := fp.Firewall; fw != nil {
			switch {
			case out.Firewall == nil:
				c := *fw
				c.Inbound = slices.Clone(fw.Inbound)
				out.Firewall, fwOwner = &c, s.Name
			case out.Firewall.State != fw.State:
				return nil, conflict(footprint.KindFirewall, fwOwner, s.Name, "one keeps the firewall present, the other absent")
			default:
				for _, r := range fw.Inbound {
					if !slices.ContainsFunc(out.Firewall.Inbound, func(o footprint.Rule) bool { return reflect.DeepEqual(o, r) }) {
						out.Firewall.Inbound = append(out.Firewall.Inbound, r)
					}
				}
				out.Firewall.Enforce = out.Firewall.Enforce || fw.Enforce
			}
		}
	}
	if err := footprint.Validate(out); err != nil {
		return nil, errcode.Wrap(err, errcode.RoleConflict, "the roles together make no valid footprint: %v", errcode.From(err, errcode.FootprintInvalid).Message)
	}
	return out, nil
}

// merger remembers, per kind and key, where the first claim of an item went and which role made it.
// Keys are per kind, so no item ID is built unless two roles meet on one.
type merger struct {
	claims map[string]map[string]claim
}

type claim struct {
	index int
	role  string
}

// merge adds one role's items of a kind to what the roles before it claimed.
func merge[T any](m *merger, s Spec, dst, items []T, kind string, key func(T) string, enforce func(*T) *bool) ([]T, error) {
	if len(items) == 0 {
		return dst, nil
	}
	claims := m.claims[kind]
	if claims == nil {
		claims = make(map[string]claim, len(items))
		m.claims[kind] = claims
	}
	for _, it := range items {
		k := key(it)
		c, claimed := claims[k]
		if !claimed {
			claims[k] = claim{len(dst), s.Name}
			dst = append(dst, it)
			continue
		}
		i := c.index
		held, want := dst[i], it
		*enforce(&held), *enforce(&want) = false, false
		if !reflect.DeepEqual(held, want) {
			return nil, conflict(footprint.ID(kind, k), c.role, s.Name, "they declare it differently")
		}
		if *enforce(&it) {
			*enforce(&dst[i]) = true
		}
	}
	return dst, nil
}

func conflict(item, a, b, why string) error {
	return errcode.New(errcode.RoleConflict, "roles %s and %s both claim %s and %s", a, b, item, why).
		With(errcode.DetailItem, item).With(errcode.DetailRoles, []string{a, b})
}
