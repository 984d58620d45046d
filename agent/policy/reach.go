package policy

import (
	"path"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Reach is what the word m (its module digest) may touch on this node: each capability its signed
// manifest declares, with the bounds this policy leaves of it. It mirrors what the word host enforces
// (host/wasm/internal/caps) from the same policy sections: "@self" becomes the policy's names and
// "@renewal" its renewal program; the footprint capabilities that change the machine meet the converge
// section; the pkg.* capabilities its packages section; the backup capabilities its backup section.
// reserved are the agent's own folders, which converge never writes whatever the policy says. The
// host stays the judge: this is a report of it, so that an operator sees a refusal coming.
func (p *Policy) Reach(m *manifest.Manifest, digest string, reserved []string) channel.WordReach {
	out := channel.WordReach{Word: m.Name, Digest: digest, Caps: []channel.CapReach{}}
	if err := p.Check(m); err != nil {
		out.Refused = err.Error()
	}
	for _, c := range m.Capabilities {
		r := channel.CapReach{Cap: c.Cap, Roots: c.Paths, Units: c.Units, Hosts: c.Hosts, Names: c.Names, Packages: c.Packages, Origins: c.Origins}
		for _, prog := range c.Programs {
			r.Programs = append(r.Programs, prog.Path)
		}
		if p.problem == nil {
			p.narrow(&r, reserved)
		}
		out.Caps = append(out.Caps, r)
	}
	return out
}

// narrow applies the policy's bounds to one capability, as the word host would.
func (p *Policy) narrow(r *channel.CapReach, reserved []string) {
	conv := p.Converge
	deny := func(why string) { r.Narrowed, r.Denied = true, why }
	convergeCaps := []string{capv1.CapFSInstall, capv1.CapSystemdEnsure, capv1.CapAccountEnsure, capv1.CapSysctlApply, capv1.CapNFTApply}
	if conv == nil && slices.Contains(convergeCaps, r.Cap) {
		deny("this node's policy has no converge section, so converge touches nothing here")
		return
	}
	switch r.Cap {
	case capv1.CapNetHTTP, capv1.CapTLSPeer:
		if !slices.Contains(r.Hosts, manifest.SelfHost) {
			return
		}
		r.Narrowed = true
		var hosts []string
		for _, h := range r.Hosts {
			if h == manifest.SelfHost {
				hosts = append(hosts, p.Names...)
			} else {
				hosts = append(hosts, h)
			}
		}
		r.Hosts = dedupe(hosts)
		if len(r.Hosts) == 0 {
			deny("@self is this node's names, and its policy lists none")
		}
	case capv1.CapExecPinned:
		if !slices.Contains(r.Programs, manifest.NodeRenewal) {
			return
		}
		r.Narrowed = true
		var progs []string
		for _, prog := range r.Programs {
			switch {
			case prog != manifest.NodeRenewal:
				progs = append(progs, prog)
			case p.Renewal != nil:
				progs = append(progs, p.Renewal.Path)
			}
		}
		r.Programs = progs
		if len(progs) == 0 {
			deny("@renewal is the renewal program this node's policy pins, and it pins none")
		}
	case capv1.CapFSInstall:
		r.Narrowed, r.Roots = true, intersectRoots(r.Roots, conv.Paths)
		if len(reserved) > 0 {
			r.Note = "never beneath the agent's own folders " + strings.Join(reserved, ", ")
		}
		emptyDenied(r, r.Roots, "no folder is beneath both the manifest's paths and the policy's converge paths")
	case capv1.CapSystemdEnsure:
		r.Narrowed, r.Units = true, intersectPatterns(r.Units, conv.Units)
		emptyDenied(r, r.Units, "no unit both the manifest and the policy's converge units allow")
	case capv1.CapAccountEnsure:
		r.Narrowed, r.Names = true, intersectPatterns(r.Names, append(slices.Clone(conv.Users), conv.Groups...))
		r.Note = "users as the policy's converge users, groups as its converge groups"
		emptyDenied(r, r.Names, "no user or group both the manifest and the policy's converge section allow")
	case capv1.CapSysctlApply:
		r.Narrowed, r.Names = true, intersectPatterns(r.Names, conv.Sysctl)
		emptyDenied(r, r.Names, "no sysctl key both the manifest and the policy's converge sysctl allow")
	case capv1.CapNFTApply:
		r.Narrowed = true
		if !conv.Firewall {
			deny("this node's policy does not make the inbound firewall Lexicon's (converge.firewall)")
		}
	case capv1.CapPkgQuery, capv1.CapPkgRestarts, capv1.CapPkgRefresh, capv1.CapPkgRepair, capv1.CapPkgUpgrade, capv1.CapPkgEnsure:
		p.narrowPackages(r)
	case capv1.CapBackupBegin, capv1.CapBackupCommit, capv1.CapBackupVerify, capv1.CapBackupPaths, capv1.CapBackupRestore, capv1.CapBackupDatabase:
		b := p.Backup
		if b == nil {
			deny("this node's policy has no backup section, so it backs up and restores nothing")
			return
		}
		r.Narrowed = true
		switch r.Cap {
		case capv1.CapBackupPaths:
			r.Roots = intersectRoots(r.Roots, b.Paths)
			emptyDenied(r, r.Roots, "no folder is beneath both the manifest's paths and the policy's backup paths")
		case capv1.CapBackupRestore:
			r.Roots = intersectRoots(r.Roots, b.RestorePaths)
			emptyDenied(r, r.Roots, "no folder is beneath both the manifest's paths and the policy's restore paths")
		case capv1.CapBackupDatabase:
			if b.Postgres == nil || len(b.Databases) == 0 {
				deny("this node's policy names no database to back up")
				return
			}
			r.Names = slices.Clone(b.Databases)
		}
	}
}

// narrowPackages applies the packages section (and, for pkg.ensure, the converge section's packages).
func (p *Policy) narrowPackages(r *channel.CapReach) {
	pk := p.Packages
	if !pk.AllowsOperation(r.Cap) {
		r.Narrowed, r.Denied = true, "this node's policy allows the package operations "+strings.Join(pk.Operations, ", ")+" only"
		if len(pk.Operations) == 0 {
			r.Denied = "this node's policy allows no package operation"
		}
		return
	}
	if r.Cap == capv1.CapPkgEnsure {
		if p.Converge == nil {
			r.Narrowed, r.Denied = true, "this node's policy has no converge section, so converge touches nothing here"
			return
		}
		r.Narrowed, r.Packages = true, intersectPatterns(r.Packages, p.Converge.Packages)
	}
	if r.Cap != capv1.CapPkgUpgrade && r.Cap != capv1.CapPkgEnsure {
		r.Narrowed = r.Narrowed || (pk != nil && pk.Operations != nil)
		return
	}
	if pk != nil && pk.Names != nil {
		r.Narrowed, r.Packages = true, intersectPatterns(r.Packages, pk.Names)
	}
	if pk != nil && pk.Origins != nil {
		r.Narrowed, r.Origins = true, intersectOrigins(r.Origins, pk.Origins)
	}
	switch {
	case len(r.Packages) == 0 && r.Narrowed:
		r.Denied = "no package name both the manifest and the policy allow"
	case len(r.Origins) == 0 && r.Narrowed:
		r.Denied = "no archive both the manifest and the policy allow"
	}
}

// emptyDenied says why when narrowing left a required bound empty.
func emptyDenied(r *channel.CapReach, list []string, why string) {
	if len(list) == 0 {
		r.Denied = why
	}
}

// intersectRoots answers the folders beneath both one of a and one of b: of two nested roots, the
// deeper one.
func intersectRoots(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			switch {
			case beneath(x, y):
				out = append(out, x)
			case beneath(y, x):
				out = append(out, y)
			}
		}
	}
	return dedupe(out)
}

func beneath(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// intersectPatterns answers the names both a pattern of a and a pattern of b match (path.Match
// syntax): a name or pattern one side names that the other's pattern holds is given as it is; two
// patterns neither of which holds the other are given as "x & y" (a name must match both).
func intersectPatterns(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			switch {
			case x == y || y == "*":
				out = append(out, x)
			case x == "*":
				out = append(out, y)
			case !meta(x) && match(y, x):
				out = append(out, x)
			case !meta(y) && match(x, y):
				out = append(out, y)
			case holds(x, y):
				out = append(out, y)
			case holds(y, x):
				out = append(out, x)
			case !strings.HasPrefix(literal(x), literal(y)) && !strings.HasPrefix(literal(y), literal(x)):
				// Their fixed starts differ: no name matches both.
			case meta(x) && meta(y):
				out = append(out, x+" & "+y)
			}
		}
	}
	return dedupe(out)
}

// intersectOrigins answers the origin patterns both sides allow: one both name, else the pair.
func intersectOrigins(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			switch {
			case x == y:
				out = append(out, x)
			case !disjointOrigins(x, y):
				out = append(out, x+" & "+y)
			}
		}
	}
	return dedupe(out)
}

// disjointOrigins reports whether no archive can match both origin patterns: both fix one field
// (origin=Debian, origin=Ubuntu) to different values.
func disjointOrigins(x, y string) bool {
	fields := func(p string) map[string]string {
		m := map[string]string{}
		for _, kv := range strings.Split(p, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}
		return m
	}
	fy := fields(y)
	for k, vx := range fields(x) {
		if vy, ok := fy[k]; ok && vx != vy && !meta(vx) && !meta(vy) {
			return true
		}
	}
	return false
}

// holds reports whether the pattern x, a fixed start and a trailing "*", matches every name y does:
// y starts with that start (net.* holds net.ipv4.*).
func holds(x, y string) bool {
	start, ok := strings.CutSuffix(x, "*")
	return ok && !meta(start) && strings.HasPrefix(y, start)
}

// literal is a pattern's fixed start, before its first special character.
func literal(s string) string {
	if i := strings.IndexAny(s, `*?[\`); i >= 0 {
		return s[:i]
	}
	return s
}

func meta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

func match(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

func dedupe(l []string) []string {
	var out []string
	for _, s := range l {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Running is the policy a running agent acts on, for its reach: the agent's word host took the names,
// the renewal program, the packages and the backup sections from the file as it read it at start
// (started), while the class check and the converge section read the file again each time (now). A
// policy that cannot be trusted now refuses every word, whatever it said at start.
func Running(started, now *Policy) *Policy {
	if now.problem != nil {
		return now
	}
	p := *now
	p.Names, p.Renewal, p.Packages, p.Backup = started.Names, started.Renewal, started.Packages, started.Backup
	return &p
}
