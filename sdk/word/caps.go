package word

import (
	"io/fs"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// The shapes capabilities answer with, under their SDK names.
type (
	FileInfo      = capv1.FileInfo
	Listing       = capv1.FSListResult
	Written       = capv1.FSWriteResult
	Chunk         = capv1.FSReadResult
	Facts         = capv1.Facts
	Disk          = capv1.Disk
	Unit          = capv1.Unit
	JournalEntry  = capv1.JournalEntry
	Journal       = capv1.JournalResult
	HTTPRequest   = capv1.HTTPRequest
	HTTPResponse  = capv1.HTTPResponse
	Certificate   = capv1.Certificate
	PeerChain     = capv1.TLSPeerResult
	ProgramResult = capv1.ExecResult
	Removed       = capv1.FSRemoveResult
)

// FileSystem is fs.read, fs.stat, fs.list, fs.write and fs.remove, beneath the roots the manifest declares.
type FileSystem struct{}

// FS returns the file-system client.
func FS() FileSystem { return FileSystem{} }

// Read returns the file's first bytes, as many as the capability's max_bytes allows, and whether that
// is the whole file.
func (FileSystem) Read(path string) (data []byte, whole bool, err error) {
	c, err := FileSystem{}.ReadAt(path, 0, 0)
	return c.Data, c.EOF, err
}

// ReadAt reads up to length bytes (0: as many as allowed) from offset.
func (FileSystem) ReadAt(path string, offset, length int64) (Chunk, error) {
	var out Chunk
	err := Call(capv1.FSRead{Cap: capv1.CapFSRead, Path: path, Offset: offset, Length: length}, &out)
	return out, err
}

// Stat describes path without following a final symlink.
func (FileSystem) Stat(path string) (FileInfo, error) {
	var out FileInfo
	err := Call(capv1.FSStat{Cap: capv1.CapFSStat, Path: path}, &out)
	return out, err
}

// List lists a directory in name order, at most limit entries (0: the host's cap).
func (FileSystem) List(path string, limit int) (Listing, error) {
	var out Listing
	err := Call(capv1.FSList{Cap: capv1.CapFSList, Path: path, Limit: limit}, &out)
	return out, err
}

// ListSizes lists a directory with each entry's allocated size, directories summed as du does.
func (FileSystem) ListSizes(path string, limit int) (Listing, error) {
	var out Listing
	err := Call(capv1.FSList{Cap: capv1.CapFSList, Path: path, Sizes: true, Limit: limit}, &out)
	return out, err
}

// Write replaces the file atomically. perm 0 keeps an existing file's mode (0644 for a new one).
func (FileSystem) Write(path string, data []byte, perm fs.FileMode) (Written, error) {
	var out Written
	err := Call(capv1.FSWrite{Cap: capv1.CapFSWrite, Path: path, Data: data, Mode: uint32(perm.Perm())}, &out)
	return out, err
}

// Remove unlinks a regular file whose name matches a declared pattern and which is at least the
// declared minimum age old (fs.remove).
func (FileSystem) Remove(path string) (Removed, error) {
	var out Removed
	err := Call(capv1.FSRemove{Cap: capv1.CapFSRemove, Path: path}, &out)
	return out, err
}

// System is sys.facts and sys.disk.
type System struct{}

// Sys returns the system client.
func Sys() System { return System{} }

// Facts returns the machine's facts; those it cannot give are named in Facts.Unknown.
func (System) Facts() (Facts, error) {
	var out Facts
	err := Call(capv1.SysFacts{Cap: capv1.CapSysFacts}, &out)
	return out, err
}

// Disk returns the usage of the filesystem holding path.
func (System) Disk(path string) (Disk, error) {
	var out capv1.SysDiskResult
	if err := Call(capv1.SysDisk{Cap: capv1.CapSysDisk, Path: path}, &out); err != nil {
		return Disk{}, err
	}
	if len(out.Disks) == 0 {
		return Disk{}, Fail(errcode.CapabilityFailed, "the host returned no filesystem for %s", path)
	}
	return out.Disks[0], nil
}

// Disks returns the usage of every real filesystem beneath the declared roots.
func (System) Disks() ([]Disk, error) {
	var out capv1.SysDiskResult
	err := Call(capv1.SysDisk{Cap: capv1.CapSysDisk}, &out)
	return out.Disks, err
}

// Services is systemd.unit, systemd.restart and systemd.reset_failed, for units the manifest's
// patterns match.
type Services struct{}

// Systemd returns the service-manager client.
func Systemd() Services { return Services{} }

// Unit returns a unit's state; a unit systemd does not know has LoadState "not-found".
func (Services) Unit(name string) (Unit, error) {
	var out Unit
	err := Call(capv1.SystemdUnit{Cap: capv1.CapSystemdUnit, Unit: name}, &out)
	return out, err
}

// Failed lists the failed units the manifest's patterns match.
func (Services) Failed() ([]string, error) {
	var out capv1.FailedUnits
	err := Call(capv1.SystemdUnit{Cap: capv1.CapSystemdUnit, Failed: true}, &out)
	return out.Units, err
}

// Restart restarts a unit and waits for systemd to finish.
func (Services) Restart(name string) error {
	return Call(capv1.SystemdAction{Cap: capv1.CapSystemdRestart, Unit: name}, nil)
}

// ResetFailed clears a unit's failed state.
func (Services) ResetFailed(name string) error {
	return Call(capv1.SystemdAction{Cap: capv1.CapSystemdResetFailed, Unit: name}, nil)
}

// Enable reloads systemd's unit files and enables a unit so it starts at boot (systemd.enable).
func (Services) Enable(name string) error {
	return Call(capv1.SystemdEnable{Cap: capv1.CapSystemdEnable, Unit: name}, nil)
}

// VacuumJournal shrinks the journal's archived files to at most sizeBytes, which may not be under the
// manifest's declared min_bytes (journal.vacuum).
func VacuumJournal(sizeBytes int64) error {
	return Call(capv1.JournalVacuum{Cap: capv1.CapJournalVacuum, SizeBytes: sizeBytes}, nil)
}

// ReadJournal returns a unit's last lines journal entries, oldest first (journal.read).
func ReadJournal(unit string, lines int) (Journal, error) {
	var out Journal
	err := Call(capv1.JournalRead{Cap: capv1.CapJournalRead, Unit: unit, Lines: lines}, &out)
	return out, err
}

// Web is net.http to the hosts the manifest declares.
type Web struct{}

// HTTP returns the HTTP client.
func HTTP() Web { return Web{} }

// Get fetches url. Redirects come back as they are, with their Location header.
func (Web) Get(url string) (HTTPResponse, error) {
	return Web{}.Do(HTTPRequest{URL: url})
}

// Do sends a GET or HEAD request.
func (Web) Do(req HTTPRequest) (HTTPResponse, error) {
	req.Cap = capv1.CapNetHTTP
	var out HTTPResponse
	err := Call(req, &out)
	return out, err
}

// TLSClient is tls.peer.
type TLSClient struct{}

// TLS returns the TLS client.
func TLS() TLSClient { return TLSClient{} }

// Peer returns the certificate chain host serves on port (0: 443), unverified.
func (TLSClient) Peer(host string, port int) (PeerChain, error) {
	var out PeerChain
	err := Call(capv1.TLSPeer{Cap: capv1.CapTLSPeer, Host: host, Port: port}, &out)
	return out, err
}

// Programs is exec.pinned.
type Programs struct{}

// Exec returns the pinned-program client.
func Exec() Programs { return Programs{} }

// Run runs a program the manifest pins, with arguments its schema accepts.
func (Programs) Run(path string, args ...string) (ProgramResult, error) {
	var out ProgramResult
	err := Call(capv1.ExecPinned{Cap: capv1.CapExecPinned, Path: path, Args: args}, &out)
	return out, err
}
