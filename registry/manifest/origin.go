package manifest

import (
	"fmt"
	"path"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// OriginPattern matches the archives a package version comes from, in the shape of unattended-upgrades'
// Origins-Pattern: comma-separated key=value pairs, all of which must match, each value a path.Match
// pattern. Keys are origin, label, suite, codename, component and site (the fields of capv1.Origin).
//
//	origin=Debian,label=Debian-Security          Debian's security archive
//	origin=Debian,codename=bookworm-security,site=security.debian.org
//	suite=*-security                              any archive whose suite is a security suite
type OriginPattern struct {
	terms []originTerm
	text  string
}

type originTerm struct{ key, value string }

var originKeys = []string{"origin", "label", "suite", "codename", "component", "site"}

// ParseOriginPattern reads one origin pattern. It must name at least one key, each at most once, with
// a valid path.Match value of at most 128 bytes.
func ParseOriginPattern(s string) (OriginPattern, error) {
	p := OriginPattern{text: s}
	if s == "" || len(s) > 512 {
		return p, fmt.Errorf("origin pattern %q must be 1 to 512 bytes of key=value pairs", s)
	}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		switch {
		case !ok || v == "":
			return p, fmt.Errorf("origin pattern %q: %q is not key=value", s, part)
		case !contains(originKeys, k):
			return p, fmt.Errorf("origin pattern %q: key %q is not one of %s", s, k, strings.Join(originKeys, ", "))
		case seen[k]:
			return p, fmt.Errorf("origin pattern %q names %s twice", s, k)
		case len(v) > 128 || strings.ContainsAny(v, " \t\n"):
			return p, fmt.Errorf("origin pattern %q: value %q is too long or holds spaces", s, v)
		}
		if _, err := path.Match(v, ""); err != nil {
			return p, fmt.Errorf("origin pattern %q: %q is not a valid pattern", s, v)
		}
		seen[k] = true
		p.terms = append(p.terms, originTerm{k, v})
	}
	return p, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// String is the pattern as written.
func (p OriginPattern) String() string { return p.text }

// Match reports whether o satisfies every term.
func (p OriginPattern) Match(o capv1.Origin) bool {
	if len(p.terms) == 0 {
		return false
	}
	for _, t := range p.terms {
		var v string
		switch t.key {
		case "origin":
			v = o.Origin
		case "label":
			v = o.Label
		case "suite":
			v = o.Suite
		case "codename":
			v = o.Codename
		case "component":
			v = o.Component
		case "site":
			v = o.Site
		}
		if ok, _ := path.Match(t.value, v); !ok {
			return false
		}
	}
	return true
}

// MatchAnyOrigin reports whether o matches one of the patterns (which Parse has checked; one that does
// not parse matches nothing).
func MatchAnyOrigin(patterns []string, o capv1.Origin) bool {
	for _, s := range patterns {
		if p, err := ParseOriginPattern(s); err == nil && p.Match(o) {
			return true
		}
	}
	return false
}

// ValidPackagePattern reports whether s is a path.Match pattern of Debian package names: 1 to 128
// bytes of lowercase letters, digits, "+-." and the pattern characters "*?[]^!".
func ValidPackagePattern(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(lower(c) || digit(c) || strings.IndexByte("+-.*?[]^!", c) >= 0) {
			return false
		}
	}
	_, err := path.Match(s, "")
	return err == nil
}

// MatchAnyPackage reports whether name matches one of the patterns.
func MatchAnyPackage(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// NodePackages is a node's own bound on the pkg.* capabilities, from its policy: each list given
// narrows what a word's manifest allows, and nothing here widens it. A list left out (nil) leaves that
// bound to the manifest; an empty list allows nothing.
type NodePackages struct {
	// Operations are the pkg.* capabilities the node allows, named without "pkg." (query, restarts,
	// refresh, upgrade, repair).
	Operations []string `json:"operations,omitempty"`
	// Origins are the origin patterns an upgrade may install from.
	Origins []string `json:"origins,omitempty"`
	// Names are the package-name patterns an upgrade may install or replace.
	Names []string `json:"names,omitempty"`
}

// PackageOperations are the names NodePackages.Operations takes.
var PackageOperations = []string{"query", "restarts", "refresh", "upgrade", "repair"}

// Validate checks every operation, origin pattern and name pattern.
func (p NodePackages) Validate() error {
	for i, op := range p.Operations {
		if !contains(PackageOperations, op) {
			return invalid(fmt.Sprintf("operations[%d]", i), "operation %q is not one of %s", op, strings.Join(PackageOperations, ", "))
		}
	}
	for i, o := range p.Origins {
		if _, err := ParseOriginPattern(o); err != nil {
			return invalid(fmt.Sprintf("origins[%d]", i), "%v", err)
		}
	}
	for i, n := range p.Names {
		if !ValidPackagePattern(n) {
			return invalid(fmt.Sprintf("names[%d]", i), "package pattern %q is not a valid pattern of package names", n)
		}
	}
	return nil
}

// AllowsOperation reports whether the node lets a word use the pkg.* capability cap.
func (p *NodePackages) AllowsOperation(cap string) bool {
	return p == nil || p.Operations == nil || contains(p.Operations, strings.TrimPrefix(cap, "pkg."))
}

// AllowsOrigin reports whether the node lets an upgrade install from o.
func (p *NodePackages) AllowsOrigin(o capv1.Origin) bool {
	return p == nil || p.Origins == nil || MatchAnyOrigin(p.Origins, o)
}

// AllowsName reports whether the node lets an upgrade install or replace the package name.
func (p *NodePackages) AllowsName(name string) bool {
	return p == nil || p.Names == nil || MatchAnyPackage(p.Names, name)
}
