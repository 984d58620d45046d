package footprint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// The Compare functions say how the machine differs from an item, one short phrase per difference
// ("content", "mode 0600, not 0644"); none means the item holds. The converge word and the drift
// recipes both decide with them, so a drift is exactly what a converge would change.

// CompareFile compares a file item with the path as fs.digest saw it.
func CompareFile(want File, got capv1.FileState) []string {
	if !got.Exists {
		return []string{"missing"}
	}
	if got.Type != capv1.TypeFile {
		return []string{"not a regular file (" + got.Type + ")"}
	}
	var d []string
	if got.TooLarge || got.SHA256 != want.SHA256 {
		d = append(d, "content")
	}
	if m, _ := ParseMode(want.Mode); got.Mode&0o7777 != m {
		d = append(d, fmt.Sprintf("mode %s, not %s", FormatMode(got.Mode), want.Mode))
	}
	if got.Owner != want.Owner {
		d = append(d, fmt.Sprintf("owner %s, not %s", or(got.Owner, fmt.Sprint(got.UID)), want.Owner))
	}
	if got.Group != want.Group {
		d = append(d, fmt.Sprintf("group %s, not %s", or(got.Group, fmt.Sprint(got.GID)), want.Group))
	}
	return d
}

// ContentDiffers reports whether a file's differences include its content (or its absence), which
// only new bytes can mend.
func ContentDiffers(d []string) bool {
	for _, s := range d {
		if s == "content" || s == "missing" || strings.HasPrefix(s, "not a regular file") {
			return true
		}
	}
	return false
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// CompareUser compares a user item with the user as account.read saw it.
func CompareUser(want User, got capv1.UserState) []string {
	if want.State == StateAbsent {
		if got.Exists {
			return []string{"present"}
		}
		return nil
	}
	if !got.Exists {
		return []string{"missing"}
	}
	var d []string
	if want.Shell != "" && got.Shell != want.Shell {
		d = append(d, fmt.Sprintf("shell %s, not %s", got.Shell, want.Shell))
	}
	if want.Groups != nil {
		w, g := slices.Sorted(slices.Values(want.Groups)), slices.Sorted(slices.Values(got.Groups))
		if !slices.Equal(w, g) {
			d = append(d, fmt.Sprintf("groups %s, not %s", strings.Join(g, ","), strings.Join(w, ",")))
		}
	}
	if want.SSHKeys != nil && !slices.Equal(want.SSHKeys, got.SSHKeys) {
		d = append(d, "ssh_keys")
	}
	return d
}

// CompareGroup compares a group item with the group as account.read saw it.
func CompareGroup(want Group, got capv1.GroupState) []string {
	switch {
	case want.State == StateAbsent && got.Exists:
		return []string{"present"}
	case want.State == StatePresent && !got.Exists:
		return []string{"missing"}
	}
	return nil
}

// UnitEnabled reports whether a unit-file state counts as enabled: it starts at boot, or is static
// (it has no install section and starts when something needs it), which enabling could not change.
func UnitEnabled(unitFileState string) bool {
	switch unitFileState {
	case "enabled", "enabled-runtime", "static", "generated", "alias", "indirect":
		return true
	}
	return false
}

// UnitStarted reports whether an active state counts as running.
func UnitStarted(activeState string) bool {
	return activeState == "active" || activeState == "reloading" || activeState == "activating"
}

// CompareUnit compares a unit item with the unit as systemd.unit saw it.
func CompareUnit(want Unit, got capv1.Unit) []string {
	if got.LoadState == "not-found" {
		return []string{"not found"}
	}
	var d []string
	if UnitEnabled(got.UnitFileState) != want.Enabled {
		d = append(d, fmt.Sprintf("unit file %s", or(got.UnitFileState, "unknown")))
	}
	if UnitStarted(got.ActiveState) != want.Started {
		d = append(d, fmt.Sprintf("%s", or(got.ActiveState, "unknown")))
	}
	return d
}

// SysctlValue is a sysctl value as the kernel compares it: whitespace runs are one space, ends trimmed.
func SysctlValue(v string) string { return strings.Join(strings.Fields(v), " ") }

// CompareSysctl compares a sysctl item with the value read (present false: this kernel has no such
// key).
func CompareSysctl(want Sysctl, got string, present bool) []string {
	if !present {
		return []string{"no such key"}
	}
	if SysctlValue(got) != SysctlValue(want.Value) {
		return []string{fmt.Sprintf("%s, not %s", SysctlValue(got), SysctlValue(want.Value))}
	}
	return nil
}

// CompareFirewall compares the firewall item with Lexicon's table as nft.read saw it. nft lists a table
// in its own normal form (sets merged and sorted), so the table is as declared when the node's record
// of its last apply says it rendered this same table and nft's listing is still the one it listed just
// after that apply.
func CompareFirewall(want Firewall, got capv1.NFTReadResult) []string {
	if want.State == StateAbsent {
		if got.Present {
			return []string{"present"}
		}
		return nil
	}
	switch {
	case !got.Present:
		return []string{"missing"}
	case got.Applied == nil || got.Applied.Rendered != TableDigest(want):
		return []string{"rules differ"}
	case got.Applied.Listing != got.ListingSHA256:
		return []string{"changed outside Lexicon"}
	}
	return nil
}

// ComparePackage compares a package item with the package database: whether the package is
// installed, and at which version.
func ComparePackage(want Package, installed bool, version string) []string {
	switch {
	case want.State == StateAbsent && installed:
		return []string{"installed"}
	case want.State == StatePresent && !installed:
		return []string{"missing"}
	case want.State == StatePresent && want.Version != "" && version != want.Version:
		return []string{fmt.Sprintf("version %s, not %s", version, want.Version)}
	}
	return nil
}

// TableDigest is the sha256 of the table a firewall item renders.
func TableDigest(fw Firewall) string {
	s := sha256.Sum256([]byte(RenderTable(fw)))
	return hex.EncodeToString(s[:])
}
