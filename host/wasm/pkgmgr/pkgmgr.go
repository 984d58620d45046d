// Package pkgmgr is the host's door to the system package manager: the state of the machine's
// packages, the processes running code an upgrade replaced, refreshing the lists, upgrading named
// packages and finishing a run left half done, behind one small interface (Manager) so that another
// package manager is a new implementation and no word changes. Apt (apt and dpkg on Debian) is the one
// shipped; a machine without one answers capability.unknown (Unavailable).
//
// Programs run with fixed argument lists (never a shell), non-interactive, keeping changed
// configuration files, in their own process group killed at a time cap, with capped output. Another
// run holding the package manager's lock is pkg.locked at once: nothing here waits for a lock.
package pkgmgr

import (
	"context"
	"errors"
	"os"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Manager is what the pkg.* capabilities need of a package manager. Bounds (which origins and
// names a word may install) are the caller's: a Manager reports every change a plan makes and lets
// the caller refuse it before anything runs.
type Manager interface {
	// Query returns the packages' state; installed adds every installed package.
	Query(ctx context.Context, installed bool) (capv1.PkgState, error)
	// Restarts returns the processes running replaced code, and whether a reboot is owed.
	Restarts(ctx context.Context) (capv1.RestartsResult, error)
	// Refresh refreshes the package lists.
	Refresh(ctx context.Context) (capv1.RefreshResult, error)
	// Upgrade installs exactly the versions given. It plans first and calls approve with every
	// package the plan installs or replaces, those given and those the package manager adds; it runs
	// nothing when approve refuses one (its error is returned) or when the plan removes a package
	// (pkg.would_remove).
	Upgrade(ctx context.Context, targets []Target, approve func(Change) error) (capv1.UpgradeResult, error)
	// Ensure installs each of install (at its Version when one is given, else the candidate) and
	// removes each of remove, in one run. Like Upgrade it plans first and calls approve with every
	// package the plan installs, replaces or removes (a removal has To ""); it runs nothing when approve
	// refuses one or when the plan removes a package not in remove (pkg.would_remove).
	Ensure(ctx context.Context, install []Target, remove []string, approve func(Change) error) (capv1.EnsureResult, error)
	// Repair finishes a run left half done and returns the packages it configured.
	Repair(ctx context.Context) (capv1.RepairResult, error)
}

// Target is one package to upgrade, to the version given.
type Target struct {
	Name    string
	Arch    string
	Version string
}

// spec is the package as apt-get names it, without a version: name or name:arch.
func (t Target) spec() string {
	if t.Arch == "" {
		return t.Name
	}
	return t.Name + ":" + t.Arch
}

// Change is one package a plan installs, replaces or removes. From is "" for a package newly
// installed, To "" for one removed.
type Change struct {
	Name    string
	Arch    string
	From    string
	To      string
	Origins []capv1.Origin
}

// Unavailable is the Manager of a machine with no package manager the host knows: every call
// answers capability.unknown.
type Unavailable struct{ Reason string }

func (u Unavailable) err() error {
	return errcode.New(errcode.CapabilityUnknown, "%s", u.Reason).With(errcode.DetailReason, u.Reason)
}

func (u Unavailable) Query(context.Context, bool) (capv1.PkgState, error) {
	return capv1.PkgState{}, u.err()
}
func (u Unavailable) Restarts(context.Context) (capv1.RestartsResult, error) {
	return capv1.RestartsResult{}, u.err()
}
func (u Unavailable) Refresh(context.Context) (capv1.RefreshResult, error) {
	return capv1.RefreshResult{}, u.err()
}
func (u Unavailable) Upgrade(context.Context, []Target, func(Change) error) (capv1.UpgradeResult, error) {
	return capv1.UpgradeResult{}, u.err()
}
func (u Unavailable) Ensure(context.Context, []Target, []string, func(Change) error) (capv1.EnsureResult, error) {
	return capv1.EnsureResult{}, u.err()
}
func (u Unavailable) Repair(context.Context) (capv1.RepairResult, error) {
	return capv1.RepairResult{}, u.err()
}

// Detect returns the package manager of this machine: Apt when apt-get and dpkg are installed, and
// Unavailable otherwise. Where systemd is PID 1's manager (sd_booted's test) and systemd-run is
// installed, the Apt runs its changes in transient units.
func Detect() Manager {
	a := &Apt{Root: "/"}
	if err := a.usable(); err != nil {
		return Unavailable{Reason: err.Error()}
	}
	if fi, err := os.Stat("/run/systemd/system"); err == nil && fi.IsDir() {
		if fi, err := os.Stat(systemdRun); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			a.Transient = true
		}
	}
	return a
}

var errTooLarge = errors.New("file is over the size the host reads")

var (
	_ Manager = (*Apt)(nil)
	_ Manager = Unavailable{}
)
