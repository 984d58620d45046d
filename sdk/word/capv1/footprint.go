package capv1

import "encoding/json"

// The footprint capabilities: what the converge word needs to bring a node to a footprint (the files,
// units, users and groups, firewall, sysctl values and packages it should carry; sdk/footprint is the
// format and its rules) and what a drift check needs to compare the node with one.
//
// Every capability that changes the machine (artifact.fetch stages bytes only; fs.install,
// account.ensure, nft.apply, sysctl.apply, systemd.ensure and footprint.record change it) is bounded
// twice: by the word's signed manifest (paths, units, names) and by the node's own policy, whose
// "converge" section names what converge may touch (path roots, units, user and group names, sysctl
// keys, package names, whether the firewall is Lexicon's, the largest file). What either leaves out
// answers footprint.refused, naming the item, and nothing is touched. The host also never writes
// beneath the agent's own configuration and state folders, whatever both say: those hold the policy
// that draws the bounds. footprint.check answers, for a whole footprint at once, which items the two
// bounds refuse, so that a converge can refuse everything before it touches anything.
//
// Files come from the plane by digest: artifact.fetch asks the plane's artifact route for the sha256,
// checks the bytes hash to it (footprint.digest_mismatch otherwise) and stages them on the node, where
// fs.install and fs.diff take them by the same digest. fs.install writes a temporary file in the
// target's folder (named after the target, so a run killed mid-write leaves one, which the next run
// replaces), copies the staged bytes into it while hashing them again, sets owner, group and mode,
// syncs it, renames it over the target and syncs the folder: a reader, or a crash, sees the old file
// or the new one, never a torn one.
const (
	CapArtifactFetch   = "artifact.fetch"
	CapFSDigest        = "fs.digest"
	CapFSDiff          = "fs.diff"
	CapFSInstall       = "fs.install"
	CapAccountRead     = "account.read"
	CapAccountEnsure   = "account.ensure"
	CapNFTRead         = "nft.read"
	CapNFTApply        = "nft.apply"
	CapSysctlRead      = "sysctl.read"
	CapSysctlApply     = "sysctl.apply"
	CapSystemdEnsure   = "systemd.ensure"
	CapFootprintCheck  = "footprint.check"
	CapFootprintRead   = "footprint.read"
	CapFootprintRecord = "footprint.record"
)

// FootprintSchema is the one value a footprint's "schema" member takes.
const FootprintSchema = "lexicon/footprint/v1"

// Footprint is what a node should carry. sdk/footprint decodes and checks one; the JSON Schema it
// publishes describes this shape.
type Footprint struct {
	Schema   string        `json:"schema"`
	Files    []FileItem    `json:"files,omitempty"`
	Units    []UnitItem    `json:"units,omitempty"`
	Users    []UserItem    `json:"users,omitempty"`
	Groups   []GroupItem   `json:"groups,omitempty"`
	Firewall *FirewallItem `json:"firewall,omitempty"`
	Sysctl   []SysctlItem  `json:"sysctl,omitempty"`
	Packages []PackageItem `json:"packages,omitempty"`
}

// FileItem is a regular file: its content by sha256 (the plane serves the bytes by that digest), its
// size, permission bits as four octal digits ("0644", never setuid, setgid or sticky), owner and group
// by name.
type FileItem struct {
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Mode    string `json:"mode"`
	Owner   string `json:"owner"`
	Group   string `json:"group"`
	Enforce bool   `json:"enforce,omitempty"`
}

// How a unit takes a change to one of its files.
const (
	OnChangeRestart = "restart"
	OnChangeReload  = "reload"
)

// UnitItem is a systemd unit: enabled at boot or not, running or not. Files are paths of the
// footprint's file items: when a converge changes one of them, a started unit is restarted (or
// reloaded, with OnChange "reload").
type UnitItem struct {
	Name     string   `json:"name"`
	Enabled  bool     `json:"enabled"`
	Started  bool     `json:"started"`
	Files    []string `json:"files,omitempty"`
	OnChange string   `json:"on_change,omitempty"`
	Enforce  bool     `json:"enforce,omitempty"`
}

// Item states.
const (
	StatePresent = "present"
	StateAbsent  = "absent"
)

// UserItem is a local user. Groups are its supplementary groups and SSHKeys the lines of its
// ~/.ssh/authorized_keys, each exactly as listed; null leaves them as they are (unmanaged), [] means
// none. Home and System matter only when the user is created.
type UserItem struct {
	Name    string   `json:"name"`
	State   string   `json:"state"`
	System  bool     `json:"system,omitempty"`
	Shell   string   `json:"shell,omitempty"`
	Home    string   `json:"home,omitempty"`
	Groups  []string `json:"groups"`
	SSHKeys []string `json:"ssh_keys"`
	Enforce bool     `json:"enforce,omitempty"`
}

// GroupItem is a local group.
type GroupItem struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	System  bool   `json:"system,omitempty"`
	Enforce bool   `json:"enforce,omitempty"`
}

// FirewallItem is the inbound firewall, rendered as one nftables table Lexicon owns ("inet lexicon"):
// inbound traffic is dropped except what a rule opens, replies to the machine's own connections,
// loopback and ICMP. Other tables are left alone. State absent removes Lexicon's table.
type FirewallItem struct {
	State   string         `json:"state"`
	Inbound []FirewallRule `json:"inbound,omitempty"`
	Enforce bool           `json:"enforce,omitempty"`
}

// FirewallRule opens Port (to To, when a range) for Protocol from Sources (CIDR prefixes; none means
// from anywhere).
type FirewallRule struct {
	Protocol string   `json:"protocol"`
	Port     int      `json:"port"`
	To       int      `json:"to,omitempty"`
	Sources  []string `json:"sources,omitempty"`
}

// SysctlItem is a kernel parameter, by its dotted key ("net.ipv4.ip_forward").
type SysctlItem struct {
	Key     string `json:"key"`
	Value   string `json:"value"`
	Enforce bool   `json:"enforce,omitempty"`
}

// PackageItem is a system package, present (at Version, when given) or absent.
type PackageItem struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Version string `json:"version,omitempty"`
	Enforce bool   `json:"enforce,omitempty"`
}

// ArtifactFetch stages the artifact the plane serves for SHA256 on the node. Size, when given, is the
// size the footprint names: bytes of another size are refused before they are hashed.
type ArtifactFetch struct {
	Cap    string `json:"cap"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size,omitempty"`
}

// ArtifactFetchResult says whether the bytes came from the plane now (Fetched) or were staged already.
type ArtifactFetchResult struct {
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Fetched bool   `json:"fetched"`
}

// FSDigest describes a path without following a final symlink and, for a regular file, hashes it.
type FSDigest struct {
	Cap  string `json:"cap"`
	Path string `json:"path"`
}

// FileState is a path as the disk holds it. SHA256 is empty when the file is not a regular file or is
// larger than the capability may read (TooLarge). Owner and Group are the names /etc/passwd and
// /etc/group give the ids ("" when they name none).
type FileState struct {
	Exists   bool   `json:"exists"`
	Type     string `json:"type,omitempty"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256,omitempty"`
	TooLarge bool   `json:"too_large,omitempty"`
	Mode     uint32 `json:"mode"`
	UID      uint32 `json:"uid"`
	GID      uint32 `json:"gid"`
	Owner    string `json:"owner,omitempty"`
	Group    string `json:"group,omitempty"`
}

// FSDiff asks for a unified diff from the file at Path (or nothing, when it does not exist) to the
// staged artifact SHA256.
type FSDiff struct {
	Cap    string `json:"cap"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// FSDiffResult is the diff, or why there is none: either side is not text (Binary) or is too large to
// compare (TooLarge). Truncated: the diff was cut at the host's cap.
type FSDiffResult struct {
	Diff      string `json:"diff"`
	Binary    bool   `json:"binary,omitempty"`
	TooLarge  bool   `json:"too_large,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// FSInstall makes Path the staged artifact SHA256 with the given mode (permission bits only), owner
// and group, creating missing folders (0755, root's) beneath the root. A file already holding those
// bytes keeps them and only has its mode or ownership corrected.
type FSInstall struct {
	Cap    string `json:"cap"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Mode   uint32 `json:"mode"`
	Owner  string `json:"owner"`
	Group  string `json:"group"`
}

// FSInstallResult names what changed ("content", "mode", "owner", "group"; none when nothing did) and
// the content's sha256 before ("" when the file did not exist).
type FSInstallResult struct {
	Changed  []string `json:"changed"`
	Previous string   `json:"previous,omitempty"`
}

// AccountRead asks for one user or one group.
type AccountRead struct {
	Cap   string `json:"cap"`
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
}

// UserState is a local user as /etc/passwd and /etc/group hold it. Groups are its supplementary
// groups, sorted. SSHKeys are the lines of its authorized_keys that are keys (no comments or blank
// lines); nil when the file does not exist.
type UserState struct {
	Name    string   `json:"name"`
	Exists  bool     `json:"exists"`
	UID     int      `json:"uid,omitempty"`
	GID     int      `json:"gid,omitempty"`
	Home    string   `json:"home,omitempty"`
	Shell   string   `json:"shell,omitempty"`
	Groups  []string `json:"groups,omitempty"`
	SSHKeys []string `json:"ssh_keys"`
}

// GroupState is a local group.
type GroupState struct {
	Name   string `json:"name"`
	Exists bool   `json:"exists"`
	GID    int    `json:"gid,omitempty"`
}

// AccountReadResult holds what was asked for.
type AccountReadResult struct {
	User  *UserState  `json:"user,omitempty"`
	Group *GroupState `json:"group,omitempty"`
}

// AccountEnsure brings one user or one group to its item.
type AccountEnsure struct {
	Cap   string     `json:"cap"`
	User  *UserItem  `json:"user,omitempty"`
	Group *GroupItem `json:"group,omitempty"`
}

// AccountEnsureResult names what changed ("created", "removed", "shell", "groups", "ssh_keys").
type AccountEnsureResult struct {
	Changed []string `json:"changed"`
}

// NFTRead reads Lexicon's table.
type NFTRead struct {
	Cap string `json:"cap"`
}

// NFTApplied is what the node recorded when it last applied Lexicon's table: the sha256 of the
// rendered table it applied and of nft's listing of it just after.
type NFTApplied struct {
	Rendered string `json:"rendered"`
	Listing  string `json:"listing"`
}

// NFTReadResult is Lexicon's table as nft lists it now (Listing; Present false when there is none),
// the listing's sha256, and the record of the last apply (nil: none). The table is as declared when
// the last apply rendered the declared table and the listing has not changed since.
type NFTReadResult struct {
	Present       bool        `json:"present"`
	Listing       string      `json:"listing,omitempty"`
	ListingSHA256 string      `json:"listing_sha256,omitempty"`
	Applied       *NFTApplied `json:"applied,omitempty"`
}

// NFTApply replaces Lexicon's table with the one the item renders, in one nft transaction, or removes
// it (state absent).
type NFTApply struct {
	Cap      string       `json:"cap"`
	Firewall FirewallItem `json:"firewall"`
}

// SysctlRead reads kernel parameters.
type SysctlRead struct {
	Cap  string   `json:"cap"`
	Keys []string `json:"keys"`
}

// SysctlReadResult holds each value as /proc/sys gives it, whitespace runs made single spaces;
// Missing lists keys this kernel does not have.
type SysctlReadResult struct {
	Values  map[string]string `json:"values"`
	Missing []string          `json:"missing,omitempty"`
}

// SysctlApply sets kernel parameters now and persists the whole set in the one file Lexicon owns
// beneath /etc/sysctl.d, so they hold after a reboot. Values is every sysctl item of the footprint:
// the file is rewritten to hold exactly them; only values that differ are written to /proc/sys.
type SysctlApply struct {
	Cap    string            `json:"cap"`
	Values map[string]string `json:"values"`
}

// SysctlApplyResult lists the keys written to /proc/sys, the keys this kernel does not have (neither
// written nor persisted), and whether the persisted file changed.
type SysctlApplyResult struct {
	Changed   []string `json:"changed"`
	Missing   []string `json:"missing,omitempty"`
	Persisted bool     `json:"persisted"`
}

// SystemdEnsure brings a unit to Enabled and Started. DaemonReload reloads the unit files first (a
// unit file changed); Restart restarts (or Reload reloads) a unit that was running and is to keep
// running, because one of its files changed.
type SystemdEnsure struct {
	Cap          string `json:"cap"`
	Unit         string `json:"unit"`
	Enabled      bool   `json:"enabled"`
	Started      bool   `json:"started"`
	DaemonReload bool   `json:"daemon_reload,omitempty"`
	Restart      bool   `json:"restart,omitempty"`
	Reload       bool   `json:"reload,omitempty"`
}

// SystemdEnsureResult lists what was done ("daemon-reload", "enable", "disable", "start", "stop",
// "restart", "reload") and the unit's state after.
type SystemdEnsureResult struct {
	Actions []string `json:"actions"`
	After   Unit     `json:"after"`
}

// FootprintCheck asks which items of a footprint the bounds refuse: the word's manifest and the node's
// policy.
type FootprintCheck struct {
	Cap       string          `json:"cap"`
	Footprint json.RawMessage `json:"footprint"`
}

// Refusal is one item refused, with its code (footprint.refused or footprint.too_large) and why.
type Refusal struct {
	Item   string `json:"item"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// FootprintCheckResult lists the refused items, in the footprint's order; none means every item may
// be converged.
type FootprintCheckResult struct {
	Refused []Refusal `json:"refused"`
}

// Pending is an action a converge owes a unit once its files changed, kept on the node until it is
// done, so a converge killed between writing a file and restarting its unit restarts it next time.
type Pending struct {
	Unit   string `json:"unit,omitempty"`
	Action string `json:"action"` // "daemon-reload", "restart" or "reload"
}

// FootprintRead asks for the footprint the node last converged to, and the actions still owed.
type FootprintRead struct {
	Cap string `json:"cap"`
}

// FootprintReadResult is the recorded footprint (nil: none recorded) and the owed actions.
type FootprintReadResult struct {
	Footprint json.RawMessage `json:"footprint,omitempty"`
	Pending   []Pending       `json:"pending"`
}

// FootprintRecord records the footprint the node converges to (when given) and replaces the owed
// actions, durably (written, synced and renamed) before it answers.
type FootprintRecord struct {
	Cap       string          `json:"cap"`
	Footprint json.RawMessage `json:"footprint,omitempty"`
	Pending   []Pending       `json:"pending"`
}

// FootprintRecordResult confirms the record.
type FootprintRecordResult struct {
	Pending int `json:"pending"`
}
