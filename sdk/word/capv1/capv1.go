// Package capv1 is the wire contract of the lexicon_v1 host module: the one door a word has out of its
// sandbox. It is shared, unchanged, by the SDK inside the word and the host outside it.
//
// # ABI
//
// The host module is named "lexicon_v1" and exports two functions:
//
//	call(req_ptr, req_len, resp_ptr, resp_cap i32) -> resp_len i32
//	take(resp_ptr, resp_cap i32) -> resp_len i32
//
// call reads a JSON request from guest memory [req_ptr, req_ptr+req_len), answers it, and writes the JSON
// response to [resp_ptr, resp_ptr+resp_cap) when it fits. It returns the response's length either way.
// When the length is over resp_cap nothing was written and the host holds the response until the guest
// fetches it with take, into a buffer at least that long. A request is at most MaxRequest bytes.
//
// # Requests and responses
//
// Every request is one JSON object whose "cap" names a v1 capability; its other fields are the
// arguments, which the host decodes strictly (unknown fields are refused). Every response is one of
//
//	{"result": {...}}                                   the capability answered
//	{"error": {"code": "capability.denied", ...}}       it did not (codes in sdk/errcode)
//
// A capability that cannot work on this machine (systemd in a container) answers capability.unknown:
// the host never guesses. The types below are the arguments and results, one pair per capability.
//
// # Filesystem roots
//
// fs.read, fs.stat, fs.list, fs.write, fs.remove and sys.disk act only beneath the folders their capability
// declares in "paths". The host reaches a declared root from "/", one component at a time, and never
// follows a symlink on the way: a link anywhere from "/" to the root (the root itself, its parent, any
// folder above) answers capability.denied with details.component naming it. Beneath the root a link is
// followed only while its target stays beneath the same root.
//
// fs.write also needs a root nobody else can swap: every folder from "/" down to the root's parent must
// be owned by root (or by the user the agent runs as) and writable by neither group nor others. A
// sticky folder such as /tmp counts as writable by others. Otherwise fs.write answers
// capability.root_unsafe with details.folder naming the first such folder. The root folder itself may
// belong to anyone: replacing it takes write access to its parent.
//
// fs.remove unlinks one regular file beneath a declared root, and only one whose name matches a
// declared pattern and whose modification time is at least the declared min_age_s old; it never removes
// a folder, a symlink or the root itself, and asks the same of the folders above the root as fs.write
// does (capability.root_unsafe). A file refused for where it is, its name, its type or its age answers
// capability.denied with details.reason, and nothing is removed.
//
// fs.write never writes setuid, setgid or sticky bits: a mode with any of 07000 is capability.invalid
// (details.field "mode") and nothing is written, and a file replaced keeps its permissions but not its
// setuid or setgid bit.
package capv1

import (
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// ModuleName is the import module every capability call goes through.
const ModuleName = "lexicon_v1"

// MaxRequest caps one request's bytes (an fs.write carries its data inside).
const MaxRequest = 8 << 20

// The v1 capabilities.
const (
	CapFSRead             = "fs.read"
	CapFSStat             = "fs.stat"
	CapFSList             = "fs.list"
	CapFSWrite            = "fs.write"
	CapFSRemove           = "fs.remove"
	CapSysFacts           = "sys.facts"
	CapSysDisk            = "sys.disk"
	CapSystemdUnit        = "systemd.unit"
	CapSystemdRestart     = "systemd.restart"
	CapSystemdResetFailed = "systemd.reset_failed"
	CapJournalRead        = "journal.read"
	CapJournalVacuum      = "journal.vacuum"
	CapSystemdEnable      = "systemd.enable"
	CapNetHTTP            = "net.http"
	CapTLSPeer            = "tls.peer"
	CapExecPinned         = "exec.pinned"
)

// Header is the part every request shares.
type Header struct {
	Cap string `json:"cap"`
}

// Response is the envelope of every answer.
type Response struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *errcode.Body   `json:"error,omitempty"`
}

// FSRead reads a regular file beneath a declared root. Length 0 means as much as the capability's
// max_bytes allows.
type FSRead struct {
	Cap    string `json:"cap"`
	Path   string `json:"path"`
	Offset int64  `json:"offset,omitempty"`
	Length int64  `json:"length,omitempty"`
}

// FSReadResult holds the bytes read; EOF says the file ends within them.
type FSReadResult struct {
	Data []byte `json:"data"`
	Size int64  `json:"size"`
	EOF  bool   `json:"eof"`
}

// FSStat describes one path beneath a declared root without following a final symlink.
type FSStat struct {
	Cap  string `json:"cap"`
	Path string `json:"path"`
}

// File types in FileInfo.Type.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// FileInfo describes a file. For fs.list with Sizes, a directory's Size is the bytes allocated beneath
// it, as du counts them.
type FileInfo struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"`
	Size    int64     `json:"size"`
	Mode    uint32    `json:"mode"` // permission and setuid/setgid/sticky bits
	ModTime time.Time `json:"mtime"`
	UID     uint32    `json:"uid"`
	GID     uint32    `json:"gid"`
	Target  string    `json:"target,omitempty"` // a symlink's target, as written
}

// FSList lists a directory beneath a declared root. Sizes asks for each subdirectory's total size;
// Limit caps the entries (0: the host's cap).
type FSList struct {
	Cap   string `json:"cap"`
	Path  string `json:"path"`
	Sizes bool   `json:"sizes,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// FSListResult holds the entries in name order. Truncated: more entries exist. Partial: some sizes stop
// short (unreadable directories, or the walk's budget ran out).
type FSListResult struct {
	Entries   []FileInfo `json:"entries"`
	Truncated bool       `json:"truncated"`
	Partial   bool       `json:"partial"`
}

// FSWrite replaces a file beneath a declared root atomically: the new bytes appear whole or not at all.
// Mode 0 keeps an existing file's permission bits, or 0644 for a new one. Mode may hold permission bits
// only (0777): setuid, setgid and sticky bits are refused.
type FSWrite struct {
	Cap  string `json:"cap"`
	Path string `json:"path"`
	Data []byte `json:"data"`
	Mode uint32 `json:"mode,omitempty"`
}

// FSWriteResult confirms what was written.
type FSWriteResult struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// FSRemove unlinks one file beneath a declared root (fs.remove). The file must be a regular file whose
// base name matches one of the declared patterns and whose modification time is at least the declared
// min_age_s in the past. A link beneath the root on the way to its folder is followed only while it
// stays beneath the root; a final symlink is refused, never followed nor removed.
type FSRemove struct {
	Cap  string `json:"cap"`
	Path string `json:"path"`
}

// FSRemoveResult says what went: the file's size and the bytes it had allocated.
type FSRemoveResult struct {
	Size      int64 `json:"size"`
	Allocated int64 `json:"allocated"`
}

// SysFacts asks for the machine's facts.
type SysFacts struct {
	Cap string `json:"cap"`
}

// Facts describe the machine. A fact this machine cannot give is named in Unknown and left zero.
type Facts struct {
	Hostname string    `json:"hostname"`
	OS       OSRelease `json:"os"`
	Kernel   string    `json:"kernel"`
	Arch     string    `json:"arch"`
	UptimeS  float64   `json:"uptime_s"`
	BootID   string    `json:"boot_id"`
	Load     []float64 `json:"load"` // 1, 5 and 15 minutes
	Memory   Memory    `json:"memory"`
	CPUs     int       `json:"cpus"`
	Unknown  []string  `json:"unknown,omitempty"`
}

// OSRelease is the part of os-release a report needs.
type OSRelease struct {
	ID         string `json:"id"`
	VersionID  string `json:"version_id"`
	PrettyName string `json:"pretty_name"`
	// VersionCodename and SupportEnd (os-release's SUPPORT_END, YYYY-MM-DD, which few releases set)
	// are filled by pkg.query.
	VersionCodename string `json:"version_codename,omitempty"`
	SupportEnd      string `json:"support_end,omitempty"`
}

// Memory is in bytes, as /proc/meminfo gives it.
type Memory struct {
	Total     uint64 `json:"total"`
	Available uint64 `json:"available"`
	SwapTotal uint64 `json:"swap_total"`
	SwapFree  uint64 `json:"swap_free"`
}

// SysDisk asks for one filesystem (the one holding Path) or, with Path empty, every real mounted one
// beneath the declared roots (all of them when none are declared).
type SysDisk struct {
	Cap  string `json:"cap"`
	Path string `json:"path,omitempty"`
}

// Disk is one filesystem's usage, in bytes and inodes.
type Disk struct {
	Mount      string `json:"mount"`
	Device     string `json:"device,omitempty"`
	FSType     string `json:"fstype,omitempty"`
	Total      uint64 `json:"total"`
	Free       uint64 `json:"free"`
	Available  uint64 `json:"available"`
	Inodes     uint64 `json:"inodes"`
	InodesFree uint64 `json:"inodes_free"`
}

// SysDiskResult lists filesystems.
type SysDiskResult struct {
	Disks []Disk `json:"disks"`
}

// SystemdUnit asks for one unit's state, or with Failed the failed units matching the declared
// patterns.
type SystemdUnit struct {
	Cap    string `json:"cap"`
	Unit   string `json:"unit,omitempty"`
	Failed bool   `json:"failed,omitempty"`
}

// Unit is a unit's state as systemd reports it (systemctl show).
type Unit struct {
	Name           string `json:"name"`
	Description    string `json:"description"`
	LoadState      string `json:"load_state"`
	ActiveState    string `json:"active_state"`
	SubState       string `json:"sub_state"`
	Result         string `json:"result"`
	ExecMainStatus int    `json:"exec_main_status"`
	ExecMainCode   string `json:"exec_main_code,omitempty"`
	MainPID        int    `json:"main_pid"`
	NRestarts      int    `json:"n_restarts"`
	ActiveEnter    string `json:"active_enter,omitempty"`
	// UnitFileState is whether the unit starts at boot: enabled, disabled, static, masked, ...
	UnitFileState string `json:"unit_file_state,omitempty"`
	// Restart is the service's Restart= setting: no, on-failure, always, ...
	Restart string `json:"restart,omitempty"`
}

// FailedUnits lists failed units by name.
type FailedUnits struct {
	Units []string `json:"units"`
}

// SystemdAction restarts a unit (systemd.restart) or resets its failed state (systemd.reset_failed),
// and waits for systemd to finish the job.
type SystemdAction struct {
	Cap  string `json:"cap"`
	Unit string `json:"unit"`
}

// SystemdActionResult names the unit acted on.
type SystemdActionResult struct {
	Unit string `json:"unit"`
}

// SystemdEnable reloads systemd's unit files (daemon-reload, so a unit file just written is the one in
// effect) and enables the unit so it starts at boot (systemd.enable).
type SystemdEnable struct {
	Cap  string `json:"cap"`
	Unit string `json:"unit"`
}

// JournalVacuum shrinks the journal's archived files to at most SizeBytes (journalctl
// --vacuum-size). SizeBytes may not be below the capability's declared min_bytes, so a word can trim
// the journal but never empty it.
type JournalVacuum struct {
	Cap       string `json:"cap"`
	SizeBytes int64  `json:"size_bytes"`
}

// JournalVacuumResult confirms the size the journal was vacuumed to.
type JournalVacuumResult struct {
	SizeBytes int64 `json:"size_bytes"`
}

// JournalRead asks for a unit's last Lines journal entries (0: the host's default).
type JournalRead struct {
	Cap   string `json:"cap"`
	Unit  string `json:"unit"`
	Lines int    `json:"lines,omitempty"`
}

// JournalEntry is one journal line.
type JournalEntry struct {
	Time     time.Time `json:"time"`
	Priority int       `json:"priority"`
	Message  string    `json:"message"`
}

// JournalResult holds entries oldest first. Truncated: the byte cap cut older entries.
type JournalResult struct {
	Entries   []JournalEntry `json:"entries"`
	Truncated bool           `json:"truncated"`
}

// HTTPRequest is a GET or HEAD to a declared host. Redirects are not followed: the 3xx comes back with
// its Location header.
type HTTPRequest struct {
	Cap       string            `json:"cap"`
	Method    string            `json:"method,omitempty"` // GET (default) or HEAD
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
}

// HTTPResponse is what came back; Body is cut at the capability's max_bytes (Truncated).
type HTTPResponse struct {
	Status     int               `json:"status"`
	Proto      string            `json:"proto"`
	Headers    map[string]string `json:"headers"`
	Body       []byte            `json:"body"`
	Truncated  bool              `json:"truncated"`
	RemoteAddr string            `json:"remote_addr"`
	Timing     Timing            `json:"timing"`
}

// Timing splits a request's time, in milliseconds.
type Timing struct {
	DNSMS       float64 `json:"dns_ms"`
	ConnectMS   float64 `json:"connect_ms"`
	TLSMS       float64 `json:"tls_ms"`
	FirstByteMS float64 `json:"first_byte_ms"`
	TotalMS     float64 `json:"total_ms"`
}

// TLSPeer asks for the certificate chain a declared host serves, unverified, so that an expired or
// wrong chain can be seen rather than refused. Port 0 means 443; ServerName empty means Host.
type TLSPeer struct {
	Cap        string `json:"cap"`
	Host       string `json:"host"`
	Port       int    `json:"port,omitempty"`
	ServerName string `json:"server_name,omitempty"`
	TimeoutMS  int64  `json:"timeout_ms,omitempty"`
}

// Certificate is the part of an X.509 certificate an expiry check needs.
type Certificate struct {
	Subject     string    `json:"subject"`
	Issuer      string    `json:"issuer"`
	DNSNames    []string  `json:"dns_names"`
	IPAddresses []string  `json:"ip_addresses"`
	NotBefore   time.Time `json:"not_before"`
	NotAfter    time.Time `json:"not_after"`
	Serial      string    `json:"serial"`
	IsCA        bool      `json:"is_ca"`
	SelfSigned  bool      `json:"self_signed"`
	SHA256      string    `json:"sha256"`
}

// TLSPeerResult is the served chain, leaf first.
type TLSPeerResult struct {
	Version    string        `json:"version"`
	RemoteAddr string        `json:"remote_addr"`
	Chain      []Certificate `json:"chain"`
}

// ExecPinned runs a program the manifest pins by sha256, with arguments its schema accepts.
type ExecPinned struct {
	Cap       string   `json:"cap"`
	Path      string   `json:"path"`
	Args      []string `json:"args"`
	Stdin     []byte   `json:"stdin,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
}

// ExecResult is how the program ended; output is cut at the capability's max_bytes (Truncated).
type ExecResult struct {
	ExitCode   int     `json:"exit_code"`
	Stdout     []byte  `json:"stdout"`
	Stderr     []byte  `json:"stderr"`
	Truncated  bool    `json:"truncated"`
	DurationMS float64 `json:"duration_ms"`
}
