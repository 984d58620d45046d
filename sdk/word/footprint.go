package word

import (
	"encoding/json"

	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// The footprint capabilities' answers, under their SDK names.
type (
	FileState     = capv1.FileState
	Diff          = capv1.FSDiffResult
	Installed     = capv1.FSInstallResult
	Fetched       = capv1.ArtifactFetchResult
	UserState     = capv1.UserState
	GroupState    = capv1.GroupState
	AccountChange = capv1.AccountEnsureResult
	Firewall      = capv1.NFTReadResult
	Sysctls       = capv1.SysctlReadResult
	SysctlChange  = capv1.SysctlApplyResult
	UnitChange    = capv1.SystemdEnsureResult
	Refusal       = capv1.Refusal
	Pending       = capv1.Pending
	Recorded      = capv1.FootprintReadResult
)

// Digest describes path without following a final link and hashes it when it is a regular file
// (fs.digest). A path that does not exist answers Exists false.
func (FileSystem) Digest(path string) (FileState, error) {
	var out FileState
	err := Call(capv1.FSDigest{Cap: capv1.CapFSDigest, Path: path}, &out)
	return out, err
}

// Diff is the unified diff from the file at path to the staged artifact sha256 (fs.diff).
func (FileSystem) Diff(path, sha256 string) (Diff, error) {
	var out Diff
	err := Call(capv1.FSDiff{Cap: capv1.CapFSDiff, Path: path, SHA256: sha256}, &out)
	return out, err
}

// Install makes path the staged artifact sha256 with mode (permission bits), owner and group, atomically
// (fs.install).
func (FileSystem) Install(path, sha256 string, mode uint32, owner, group string) (Installed, error) {
	var out Installed
	err := Call(capv1.FSInstall{Cap: capv1.CapFSInstall, Path: path, SHA256: sha256, Mode: mode, Owner: owner, Group: group}, &out)
	return out, err
}

// FetchArtifact stages the artifact the plane serves for sha256 (artifact.fetch); size, when not 0, is
// the size it must have.
func FetchArtifact(sha256 string, size int64) (Fetched, error) {
	var out Fetched
	err := Call(capv1.ArtifactFetch{Cap: capv1.CapArtifactFetch, SHA256: sha256, Size: size}, &out)
	return out, err
}

// Accounts is account.read and account.ensure: local users and groups.
type Accounts struct{}

// Account returns the accounts client.
func Account() Accounts { return Accounts{} }

// User reads one user, its supplementary groups and authorized keys.
func (Accounts) User(name string) (UserState, error) {
	var out capv1.AccountReadResult
	err := Call(capv1.AccountRead{Cap: capv1.CapAccountRead, User: name}, &out)
	if out.User == nil {
		return UserState{Name: name}, err
	}
	return *out.User, err
}

// Group reads one group.
func (Accounts) Group(name string) (GroupState, error) {
	var out capv1.AccountReadResult
	err := Call(capv1.AccountRead{Cap: capv1.CapAccountRead, Group: name}, &out)
	if out.Group == nil {
		return GroupState{Name: name}, err
	}
	return *out.Group, err
}

// EnsureUser brings a user to its item.
func (Accounts) EnsureUser(u capv1.UserItem) (AccountChange, error) {
	var out AccountChange
	err := Call(capv1.AccountEnsure{Cap: capv1.CapAccountEnsure, User: &u}, &out)
	return out, err
}

// EnsureGroup brings a group to its item.
func (Accounts) EnsureGroup(g capv1.GroupItem) (AccountChange, error) {
	var out AccountChange
	err := Call(capv1.AccountEnsure{Cap: capv1.CapAccountEnsure, Group: &g}, &out)
	return out, err
}

// ReadFirewall reads Lexicon's nftables table (nft.read).
func ReadFirewall() (Firewall, error) {
	var out Firewall
	err := Call(capv1.NFTRead{Cap: capv1.CapNFTRead}, &out)
	return out, err
}

// ApplyFirewall replaces Lexicon's nftables table with the item's (nft.apply).
func ApplyFirewall(fw capv1.FirewallItem) (Firewall, error) {
	var out Firewall
	err := Call(capv1.NFTApply{Cap: capv1.CapNFTApply, Firewall: fw}, &out)
	return out, err
}

// ReadSysctl reads kernel parameters (sysctl.read).
func ReadSysctl(keys []string) (Sysctls, error) {
	var out Sysctls
	err := Call(capv1.SysctlRead{Cap: capv1.CapSysctlRead, Keys: keys}, &out)
	return out, err
}

// ApplySysctl sets kernel parameters and persists the whole set (sysctl.apply).
func ApplySysctl(values map[string]string) (SysctlChange, error) {
	var out SysctlChange
	err := Call(capv1.SysctlApply{Cap: capv1.CapSysctlApply, Values: values}, &out)
	return out, err
}

// Ensure brings a unit to enabled and started, after a daemon-reload and with a restart or reload when
// asked (systemd.ensure).
func (Services) Ensure(req capv1.SystemdEnsure) (UnitChange, error) {
	req.Cap = capv1.CapSystemdEnsure
	var out UnitChange
	err := Call(req, &out)
	return out, err
}

// Footprints is footprint.check, footprint.read and footprint.record.
type Footprints struct{}

// Footprint returns the footprint client.
func Footprint() Footprints { return Footprints{} }

// Check lists the items of the footprint (its JSON) that the bounds refuse.
func (Footprints) Check(fp json.RawMessage) ([]Refusal, error) {
	var out capv1.FootprintCheckResult
	err := Call(capv1.FootprintCheck{Cap: capv1.CapFootprintCheck, Footprint: fp}, &out)
	return out.Refused, err
}

// Read returns the footprint the node converged to and the actions it still owes.
func (Footprints) Read() (Recorded, error) {
	var out Recorded
	err := Call(capv1.FootprintRead{Cap: capv1.CapFootprintRead}, &out)
	return out, err
}

// Record records the footprint converged to (nil keeps the one recorded) and the actions owed.
func (Footprints) Record(fp json.RawMessage, pending []Pending) error {
	if pending == nil {
		pending = []Pending{}
	}
	return Call(capv1.FootprintRecord{Cap: capv1.CapFootprintRecord, Footprint: fp, Pending: pending}, nil)
}
