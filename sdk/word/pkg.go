package word

import (
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// The package manager's answers under their SDK names.
type (
	PkgState       = capv1.PkgState
	Package        = capv1.Package
	Upgrade        = capv1.Upgrade
	Origin         = capv1.Origin
	Restarts       = capv1.RestartsResult
	StaleProcess   = capv1.StaleProcess
	Reboot         = capv1.Reboot
	Refreshed      = capv1.RefreshResult
	Upgraded       = capv1.UpgradeResult
	PackageChange  = capv1.PkgChange
	Repaired       = capv1.RepairResult
	PackageRelease = capv1.OSRelease
)

// PackageManager is pkg.query, pkg.restarts, pkg.refresh, pkg.upgrade and pkg.repair: the machine's
// package manager, run by the host within the manifest's bounds and the node's policy.
type PackageManager struct{}

// Packages returns the package-manager client.
func Packages() PackageManager { return PackageManager{} }

// Query returns the package manager's state: upgrades offered with their origins, half-configured and
// held packages, when the lists were refreshed; with installed, every installed package too.
func (PackageManager) Query(installed bool) (PkgState, error) {
	var out PkgState
	err := Call(capv1.PkgQuery{Cap: capv1.CapPkgQuery, Installed: installed}, &out)
	return out, err
}

// Restarts returns the processes running code an upgrade replaced, and whether a reboot is owed.
func (PackageManager) Restarts() (Restarts, error) {
	var out Restarts
	err := Call(capv1.PkgRestarts{Cap: capv1.CapPkgRestarts}, &out)
	return out, err
}

// Refresh refreshes the package lists.
func (PackageManager) Refresh() (Refreshed, error) {
	var out Refreshed
	err := Call(capv1.PkgRefresh{Cap: capv1.CapPkgRefresh}, &out)
	return out, err
}

// Upgrade upgrades the named installed packages, each to its newest version from an allowed origin;
// nothing runs if any package the upgrade would touch is not allowed (pkg.origin_refused,
// pkg.name_refused, pkg.would_remove).
func (PackageManager) Upgrade(names ...string) (Upgraded, error) {
	var out Upgraded
	err := Call(capv1.PkgUpgrade{Cap: capv1.CapPkgUpgrade, Packages: names}, &out)
	return out, err
}

// Repair finishes a run left half done (dpkg --configure -a) and returns what it configured.
func (PackageManager) Repair() (Repaired, error) {
	var out Repaired
	err := Call(capv1.PkgRepair{Cap: capv1.CapPkgRepair}, &out)
	return out, err
}

// IsLocked reports whether err says another package run holds the lock (pkg.locked).
func IsLocked(err error) bool { return errcode.Has(err, errcode.PkgLocked) }
