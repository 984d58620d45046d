package footprint

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Bounds is what a node's owner lets converge touch: the "converge" section of the node's policy
// (agent/policy). The host holds every footprint capability to it, on top of the converge word's
// signed manifest; nothing the plane sends can widen it. The zero Bounds lets converge touch nothing.
//
// Patterns are path.Match patterns ("nginx*.service", "web-*"); paths are absolute roots, a file
// being allowed beneath one.
type Bounds struct {
	// Paths are the folders beneath which converge may write files.
	Paths []string `json:"paths,omitempty"`
	// Units are the units converge may enable, start, stop, restart or reload.
	Units []string `json:"units,omitempty"`
	// Users are the users converge may create, change or remove, and Groups the groups it may create or
	// remove and put users in.
	Users  []string `json:"users,omitempty"`
	Groups []string `json:"groups,omitempty"`
	// Sysctl are the kernel parameters converge may set, by key pattern ("net.ipv4.*").
	Sysctl []string `json:"sysctl,omitempty"`
	// Packages are the package names converge may install or remove.
	Packages []string `json:"packages,omitempty"`
	// Firewall says the inbound firewall is Lexicon's to manage (its one nftables table).
	Firewall bool `json:"firewall,omitempty"`
	// MaxFileBytes caps one file's size (0: the converge word's own cap alone).
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
}

// Validate checks the bounds' own shape, for a policy file: absolute clean roots and valid patterns.
func (b *Bounds) Validate() error {
	bad := func(field, format string, args ...any) error {
		return errcode.New(errcode.PolicyUntrusted, "converge.%s: "+format, append([]any{field}, args...)...).With(errcode.DetailField, "converge."+field)
	}
	for i, p := range b.Paths {
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
			return bad("paths["+strconv.Itoa(i)+"]", "%q must be an absolute, clean path", p)
		}
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"units", b.Units}, {"users", b.Users}, {"groups", b.Groups}, {"sysctl", b.Sysctl}, {"packages", b.Packages}} {
		for i, p := range l.list {
			if _, err := path.Match(p, ""); err != nil || p == "" || strings.ContainsAny(p, "/ ") {
				return bad(l.name+"["+strconv.Itoa(i)+"]", "%q is not a valid pattern", p)
			}
		}
	}
	if b.MaxFileBytes < 0 {
		return bad("max_file_bytes", "must not be negative")
	}
	return nil
}

// Root returns the deepest of roots that p lies beneath, and whether there is one. p must be clean.
func Root(roots []string, p string) (string, bool) {
	best, ok := "", false
	for _, r := range roots {
		if (r == "/" || p == r || strings.HasPrefix(p, r+"/")) && (!ok || len(r) > len(best)) {
			best, ok = r, true
		}
	}
	return best, ok
}

// Match reports whether name matches one of patterns.
func Match(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Refusals lists the items of fp the bounds refuse, in the order Items gives, each with its code
// (footprint.refused, or footprint.too_large for a file over MaxFileBytes) and why.
func (b *Bounds) Refusals(fp *Footprint) []capv1.Refusal {
	var out []capv1.Refusal
	for _, it := range Items(fp) {
		if r, ok := b.Refusal(fp, it); !ok {
			out = append(out, r)
		}
	}
	return out
}

// Refusal checks one item of fp: ok, or the refusal.
func (b *Bounds) Refusal(fp *Footprint, it Item) (capv1.Refusal, bool) {
	no := func(format string, args ...any) (capv1.Refusal, bool) {
		return capv1.Refusal{Item: it.ID, Code: errcode.FootprintRefused, Reason: "the node's policy " + fmt.Sprintf(format, args...)}, false
	}
	switch it.Kind {
	case KindFile:
		f := fp.Files[it.Index]
		if _, ok := Root(b.Paths, f.Path); !ok {
			return no("lets converge write beneath %s only", list(b.Paths))
		}
		if b.MaxFileBytes > 0 && f.Size > b.MaxFileBytes {
			return capv1.Refusal{Item: it.ID, Code: errcode.FootprintTooLarge,
				Reason: fmt.Sprintf("%d bytes is over the node policy's max_file_bytes of %d", f.Size, b.MaxFileBytes)}, false
		}
	case KindUnit:
		if !Match(b.Units, it.Key) {
			return no("lets converge manage units %s only", list(b.Units))
		}
	case KindUser:
		if !Match(b.Users, it.Key) {
			return no("lets converge manage users %s only", list(b.Users))
		}
		for _, g := range fp.Users[it.Index].Groups {
			if !Match(b.Groups, g) {
				return no("lets converge put users in groups %s only, not %s", list(b.Groups), g)
			}
		}
	case KindGroup:
		if !Match(b.Groups, it.Key) {
			return no("lets converge manage groups %s only", list(b.Groups))
		}
	case KindFirewall:
		if !b.Firewall {
			return no("does not make the firewall Lexicon's to manage")
		}
	case KindSysctl:
		if !Match(b.Sysctl, it.Key) {
			return no("lets converge set sysctl keys %s only", list(b.Sysctl))
		}
	case KindPackage:
		if !Match(b.Packages, it.Key) {
			return no("lets converge manage packages %s only", list(b.Packages))
		}
	}
	return capv1.Refusal{}, true
}

func list(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, ", ")
}
