package pkgmgr

import (
	"context"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// ensureTimeout caps one pkg.ensure run (a role's packages, their downloads and maintainer scripts).
const ensureTimeout = upgradeTimeout

// Ensure plans the installs and removals as one apt-get install (a removal is "name-" on its command
// line), has every step approved, and only then runs the same command. A version given is installed
// exactly, older than the installed one or not (--allow-downgrades): the footprint declares it. The
// lists are locked from the plan to the end of the run, as for Upgrade. Removal keeps configuration
// files (remove, not purge), so a package installed again finds the admin's changes.
func (a *Apt) Ensure(ctx context.Context, install []Target, remove []string, approve func(Change) error) (capv1.EnsureResult, error) {
	res := capv1.EnsureResult{Changed: []capv1.PkgChange{}, Removed: []capv1.Package{}, Unchanged: []string{}}
	if err := a.unknown(); err != nil {
		return res, err
	}
	if len(install) == 0 && len(remove) == 0 {
		return res, nil
	}
	if err := a.free(); err != nil {
		return res, err
	}
	unlock, err := a.lockLists()
	if err != nil {
		return res, err
	}
	defer unlock()
	pkgs := make([]string, 0, len(install)+len(remove))
	for _, t := range install {
		n := t.Name
		if t.Arch != "" {
			n += ":" + t.Arch
		}
		if t.Version != "" {
			n += "=" + t.Version
		}
		pkgs = append(pkgs, n)
	}
	for _, n := range remove {
		pkgs = append(pkgs, n+"-")
	}
	args := append([]string{"-q", "--no-install-recommends", "--allow-downgrades"}, dpkgOptions...)
	sim, err := a.run(ctx, queryTimeout, env, append(append([]string{aptGet, "-s", "-o", "Debug::NoLocking=true"}, args...), append([]string{"install"}, pkgs...)...)...)
	if err != nil {
		return res, err
	}
	if sim.exit != 0 {
		reason := firstError(sim)
		return res, errcode.New(errcode.PkgUnresolvable, "apt cannot plan the change: %s", reason).With(errcode.DetailReason, reason)
	}
	steps := ParseSimulation(sim.stdout)
	var extra []string
	for _, s := range steps {
		if s.Remove && !slices.Contains(remove, s.Name) {
			extra = append(extra, s.Name)
		}
	}
	if len(extra) > 0 {
		return res, errcode.New(errcode.PkgWouldRemove, "the change would remove %s as well, which the footprint does not declare absent", strings.Join(extra, ", ")).
			With(errcode.DetailPackages, extra)
	}
	if len(steps) == 0 {
		return res, nil
	}
	changes, err := a.changes(ctx, steps)
	if err != nil {
		return res, err
	}
	for _, c := range changes {
		if err := approve(c); err != nil {
			return res, err
		}
	}
	before, err := readDatabase(a.root())
	if err != nil {
		return res, errcode.Wrap(err, errcode.CapabilityFailed, "cannot read dpkg's database")
	}
	o, runErr := a.change(ctx, ensureTimeout, env, append(append([]string{aptGet, "-y"}, args...), append([]string{"install"}, pkgs...)...)...)
	after, err := readDatabase(a.root())
	if err != nil {
		return res, errcode.Wrap(err, errcode.CapabilityFailed, "cannot read dpkg's database after the change")
	}
	res.Changed = diff(before, after, changes)
	for _, r := range sorted(before, Record.Present) {
		if now, ok := after[r.key()]; !ok || !now.Present() {
			res.Removed = append(res.Removed, r.pkg())
		}
	}
	if runErr != nil {
		return res, runErr
	}
	if o.exit != 0 {
		if lockMessage(o) && len(res.Changed) == 0 && len(res.Removed) == 0 {
			return res, a.lockedNow()
		}
		return res, failed(o, after)
	}
	return res, nil
}
