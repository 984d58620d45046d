package capv1

import "time"

// The pkg.* capabilities: the machine's package manager (apt and dpkg on Debian), run by the host with
// fixed argument lists, never through a shell, non-interactive, keeping changed configuration files,
// bounded in time and output. The word never runs a program: it asks, and the host decides.
//
// pkg.query and pkg.restarts only look. pkg.refresh (the package lists), pkg.upgrade (named
// packages) and pkg.repair (finish a run left half done) change the machine and need a change word.
// pkg.upgrade declares which origins it may install from ("origins") and which package names it may
// touch ("packages"); the node's policy may narrow the operations, origins and names further, never
// widen them. Another apt or dpkg run holding the lock answers pkg.locked at once: the host never
// waits for it.
//
// An origin pattern is a comma-separated list of key=value pairs, every one of which must match (the
// shape of unattended-upgrades' Origins-Pattern); values are path.Match patterns. Keys: origin,
// label, suite, codename, component, site. "origin=Debian,label=Debian-Security" matches Debian's
// security archive; "suite=*-security" any archive whose suite is a security suite.
const (
	CapPkgQuery    = "pkg.query"
	CapPkgRestarts = "pkg.restarts"
	CapPkgRefresh  = "pkg.refresh"
	CapPkgUpgrade  = "pkg.upgrade"
	CapPkgRepair   = "pkg.repair"
)

// PkgQuery asks for the package manager's state. Installed asks for the list of every installed
// package as well (a few hundred entries on a server); without it only their count comes back.
type PkgQuery struct {
	Cap       string `json:"cap"`
	Installed bool   `json:"installed,omitempty"`
}

// PkgState is the package manager's state as the machine's own package database and lists say.
type PkgState struct {
	// Backend names the package manager ("apt").
	Backend string `json:"backend"`
	// OS is the machine's os-release.
	OS OSRelease `json:"os"`
	// InstalledCount counts the installed packages; Installed lists them when asked for.
	InstalledCount int       `json:"installed_count"`
	Installed      []Package `json:"installed,omitempty"`
	// InstalledTruncated says the capability's max_bytes cut the installed list.
	InstalledTruncated bool `json:"installed_truncated,omitempty"`
	// Upgrades are the installed packages with a newer version offered, by name.
	Upgrades []Upgrade `json:"upgrades"`
	// HalfConfigured are packages a run left part way: unpacked but not configured, half-installed,
	// half-configured, or awaiting triggers.
	HalfConfigured []Package `json:"half_configured"`
	// Held are packages the admin holds at their version (apt-mark hold): never upgraded by the host.
	Held []Package `json:"held"`
	// ListsRefreshed is when the package lists were last refreshed, as far as the machine records it
	// (nil: never, or not known).
	ListsRefreshed *time.Time `json:"lists_refreshed,omitempty"`
	// UnattendedUpgrades is when unattended-upgrades last ran (nil: never, or not installed).
	UnattendedUpgrades *time.Time `json:"unattended_upgrades,omitempty"`
	// Lock is the run holding the package manager's lock right now, if any.
	Lock *PkgLock `json:"lock,omitempty"`
}

// Package is one package as the package database holds it.
type Package struct {
	Name    string `json:"name"`
	Arch    string `json:"arch,omitempty"`
	Version string `json:"version"`
	// Status is the package's state in the database (dpkg's: installed, unpacked, half-configured,
	// half-installed, triggers-awaited, triggers-pending).
	Status string `json:"status,omitempty"`
}

// Upgrade is an installed package with newer versions offered.
type Upgrade struct {
	Name      string `json:"name"`
	Arch      string `json:"arch,omitempty"`
	Installed string `json:"installed"`
	// Candidate is the version the package manager would install, and Origins where it comes from.
	Candidate string   `json:"candidate"`
	Origins   []Origin `json:"origins"`
	// Security says a version newer than the installed one comes from a security archive (a suite or
	// codename ending in -security or /updates, or a label ending in -Security); SecurityVersion is the
	// newest such version.
	Security        bool   `json:"security"`
	SecurityVersion string `json:"security_version,omitempty"`
	// Versions are every version newer than the installed one, newest first, each with its origins.
	Versions []Offered `json:"versions"`
}

// Offered is one version of a package and the archives offering it.
type Offered struct {
	Version string   `json:"version"`
	Origins []Origin `json:"origins"`
}

// Origin is an archive a version comes from, as its Release file names it.
type Origin struct {
	Origin    string `json:"origin,omitempty"`
	Label     string `json:"label,omitempty"`
	Suite     string `json:"suite,omitempty"`
	Codename  string `json:"codename,omitempty"`
	Component string `json:"component,omitempty"`
	// Site is the host the archive is fetched from (empty for a local one).
	Site string `json:"site,omitempty"`
}

// PkgLock is a run holding the package manager's lock.
type PkgLock struct {
	Path string `json:"path"`
	// PID and Command name the holder when the host can tell (0 and "" when it cannot).
	PID     int    `json:"pid,omitempty"`
	Command string `json:"command,omitempty"`
}

// PkgRestarts asks what a reboot or restarts would bring in: processes running code that an upgrade
// replaced on disk, and whether the machine owes a reboot.
type PkgRestarts struct {
	Cap string `json:"cap"`
}

// Restart methods in RestartsResult.Method.
const (
	// RestartsNeedrestart: needrestart's batch mode named the services; the host's scan of /proc
	// gave the processes.
	RestartsNeedrestart = "needrestart"
	// RestartsProc: needrestart is not installed; the host's own scan of /proc found the processes.
	RestartsProc = "proc"
)

// RestartsResult lists what runs replaced code, and the reboot.
type RestartsResult struct {
	// Method says what found them (RestartsNeedrestart or RestartsProc).
	Method string `json:"method"`
	// Services are the units needrestart says need a restart (empty with RestartsProc).
	Services []string `json:"services"`
	// Processes run an executable or map a library that has been replaced or removed on disk.
	Processes []StaleProcess `json:"processes"`
	// Reboot says whether the machine owes a reboot.
	Reboot Reboot `json:"reboot"`
}

// StaleProcess is a process running replaced code.
type StaleProcess struct {
	PID     int    `json:"pid"`
	PPID    int    `json:"ppid"`
	Command string `json:"command"`
	Exe     string `json:"exe,omitempty"`
	// Unit is the systemd unit whose cgroup the process is in ("" when none).
	Unit string `json:"unit,omitempty"`
	// Files are the replaced files it still runs (at most 16).
	Files []string `json:"files"`
}

// Reboot is what says a reboot is owed.
type Reboot struct {
	// Required: a package asked for one (/run/reboot-required); Packages are those that did.
	Required bool     `json:"required"`
	Packages []string `json:"packages,omitempty"`
	// RunningKernel is the kernel running; NewestKernel the newest installed ("" when none is, as
	// in a container). KernelOutdated: the newest installed is newer than the one running.
	RunningKernel  string `json:"running_kernel"`
	NewestKernel   string `json:"newest_kernel,omitempty"`
	KernelOutdated bool   `json:"kernel_outdated"`
}

// PkgRefresh refreshes the package lists (apt-get update).
type PkgRefresh struct {
	Cap       string `json:"cap"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
}

// RefreshResult says when the lists were refreshed and what the package manager warned of.
type RefreshResult struct {
	RefreshedAt time.Time `json:"refreshed_at"`
	Warnings    []string  `json:"warnings"`
}

// PkgUpgrade upgrades installed packages, each to its newest version from an origin both the
// manifest and the node's policy allow. Packages already at that version are left alone and named
// in Unchanged. The whole upgrade is planned first: if any package it would install or replace (those
// named and those the package manager adds) comes from an origin or has a name not allowed, or it
// would remove a package, nothing runs.
type PkgUpgrade struct {
	Cap       string   `json:"cap"`
	Packages  []string `json:"packages"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
}

// UpgradeResult is what the upgrade changed.
type UpgradeResult struct {
	Changed   []PkgChange `json:"changed"`
	Unchanged []string    `json:"unchanged"`
}

// PkgChange is one package an upgrade installed or replaced. From is empty for a package newly
// installed (a new dependency).
type PkgChange struct {
	Name    string   `json:"name"`
	Arch    string   `json:"arch,omitempty"`
	From    string   `json:"from,omitempty"`
	To      string   `json:"to"`
	Origins []Origin `json:"origins"`
}

// PkgRepair finishes a run left half done (dpkg --configure -a): it configures the packages left
// unpacked, half-configured or awaiting triggers. A half-installed package needs its package
// installed again, which pkg.upgrade of it does; pkg.repair leaves it.
type PkgRepair struct {
	Cap       string `json:"cap"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
}

// RepairResult lists the packages the repair configured; none when nothing was half done.
type RepairResult struct {
	Configured []Package `json:"configured"`
}
