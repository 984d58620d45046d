// Package footprint is the format of what a node should carry: files (by the sha256 of their content),
// systemd units, users and groups, the inbound firewall, sysctl values and packages. The plane renders
// one per node from the roles it carries; the converge word brings the node to it, and the drift
// recipes compare the node with the one it last converged to.
//
// It is shared by both sides and builds for wasip1 on the standard library: Decode reads one strictly
// (unknown or repeated members, wrong types and broken rules are footprint.invalid with details.field a
// JSON pointer to the member at fault), Validate checks one built in Go, Schema is the published JSON
// Schema of the same shape, Bounds is the node owner's say over what converge may touch, and the
// Compare functions say how an item differs from what the machine holds. The item types are the wire
// shapes of sdk/word/capv1, where the footprint capabilities take them.
//
//	fp, err := footprint.Decode(data) // footprint.invalid, details.field "/files/0/mode"
//	for _, it := range fp.Items() { fmt.Println(it.ID) } // "group:web", "user:web", "file:/etc/web.conf", ...
package footprint

import (
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// The format's types, under their footprint names.
type (
	Footprint = capv1.Footprint
	File      = capv1.FileItem
	Unit      = capv1.UnitItem
	User      = capv1.UserItem
	Group     = capv1.GroupItem
	Firewall  = capv1.FirewallItem
	Rule      = capv1.FirewallRule
	Sysctl    = capv1.SysctlItem
	Package   = capv1.PackageItem
)

// SchemaName is the value of a footprint's "schema" member.
const SchemaName = capv1.FootprintSchema

// Limits of the format. A node may take less (Bounds.MaxFileBytes, the converge word's max_bytes).
const (
	MaxBytes       = 4 << 20 // an encoded footprint
	MaxItems       = 10000   // items of all kinds together
	MaxFileSize    = 1 << 30 // one file's content
	MaxPath        = 4096
	MaxRules       = 256 // firewall rules
	MaxSources     = 64  // sources of one rule
	MaxSSHKeys     = 64  // keys of one user
	MaxSSHKey      = 8192
	MaxSysctlValue = 4096
)

// Kinds of item, the prefix of an item's ID.
const (
	KindFile     = "file"
	KindUnit     = "unit"
	KindUser     = "user"
	KindGroup    = "group"
	KindFirewall = "firewall"
	KindSysctl   = "sysctl"
	KindPackage  = "package"
)

// Item is one item of a footprint: its ID ("file:/etc/nginx/nginx.conf", "firewall"), kind, key (the
// path, name or sysctl key; "" for the firewall), whether drift of it is repaired, and its place in
// its kind's list.
type Item struct {
	ID, Kind, Key string
	Enforce       bool
	Index         int
}

// ID returns the item ID of kind and key.
func ID(kind, key string) string {
	if kind == KindFirewall {
		return KindFirewall
	}
	return kind + ":" + key
}

// Items lists the footprint's items in the order a converge applies them: groups, users, packages,
// files, sysctl, the firewall, units. Groups come before the users who join them, users and packages
// before the files they own or configure, and units last, so that a unit starts with its files in
// place.
func Items(fp *Footprint) []Item {
	var out []Item
	for i, g := range fp.Groups {
		out = append(out, Item{ID(KindGroup, g.Name), KindGroup, g.Name, g.Enforce, i})
	}
	for i, u := range fp.Users {
		out = append(out, Item{ID(KindUser, u.Name), KindUser, u.Name, u.Enforce, i})
	}
	for i, p := range fp.Packages {
		out = append(out, Item{ID(KindPackage, p.Name), KindPackage, p.Name, p.Enforce, i})
	}
	for i, f := range fp.Files {
		out = append(out, Item{ID(KindFile, f.Path), KindFile, f.Path, f.Enforce, i})
	}
	for i, s := range fp.Sysctl {
		out = append(out, Item{ID(KindSysctl, s.Key), KindSysctl, s.Key, s.Enforce, i})
	}
	if fp.Firewall != nil {
		out = append(out, Item{KindFirewall, KindFirewall, "", fp.Firewall.Enforce, 0})
	}
	for i, u := range fp.Units {
		out = append(out, Item{ID(KindUnit, u.Name), KindUnit, u.Name, u.Enforce, i})
	}
	return out
}

// Select returns the part of fp holding only the items whose IDs are in ids, in fp's order.
func Select(fp *Footprint, ids map[string]bool) *Footprint {
	out := &Footprint{Schema: fp.Schema}
	for _, f := range fp.Files {
		if ids[ID(KindFile, f.Path)] {
			out.Files = append(out.Files, f)
		}
	}
	for _, u := range fp.Units {
		if ids[ID(KindUnit, u.Name)] {
			out.Units = append(out.Units, u)
		}
	}
	for _, u := range fp.Users {
		if ids[ID(KindUser, u.Name)] {
			out.Users = append(out.Users, u)
		}
	}
	for _, g := range fp.Groups {
		if ids[ID(KindGroup, g.Name)] {
			out.Groups = append(out.Groups, g)
		}
	}
	if fp.Firewall != nil && ids[KindFirewall] {
		fw := *fp.Firewall
		out.Firewall = &fw
	}
	for _, s := range fp.Sysctl {
		if ids[ID(KindSysctl, s.Key)] {
			out.Sysctl = append(out.Sysctl, s)
		}
	}
	for _, p := range fp.Packages {
		if ids[ID(KindPackage, p.Name)] {
			out.Packages = append(out.Packages, p)
		}
	}
	return out
}
