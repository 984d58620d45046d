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
// exactly, older than the installed one or not (--allow-downgrades): the footprint declares it.
// Removal keeps configuration files (remove, not purge), so a package installed again finds the
// admin's changes.
func (a *Apt) Ensure(ctx context.Context, install []Target, remove []string, approve func(Change) error) (capv1.EnsureResult, error) {
	res := capv1.EnsureResult{Changed: []capv1.PkgChange{}, Removed: []capv1.Package{}, Unchanged: []string{}}
	if err := a.unknown(); err != nil {
		return res, err
	}
	if len(install) == 0 && len(remove) == 0 {
		return res, nil
	}
	pkgs := make([]string, 0, len(install)+len(remove))
	for _, t := range install {
		n := t.spec()
		if t.Version != "" {
			n += "=" + t.Version
		}
		pkgs = append(pkgs, n)
	}
	for _, n := range remove {
		pkgs = append(pkgs, n+"-")
	}
	run := installRun{
		what:    "change",
		args:    []string{"--no-install-recommends", "--allow-downgrades"},
		pkgs:    pkgs,
		timeout: ensureTimeout,
		refuseRemoval: func(removed []string) error {
			extra := slices.DeleteFunc(removed, func(n string) bool { return slices.Contains(remove, n) })
			if len(extra) == 0 {
				return nil
			}
			return errcode.New(errcode.PkgWouldRemove, "the change would remove %s as well, which the footprint does not declare absent", strings.Join(extra, ", ")).
				With(errcode.DetailPackages, extra)
		},
	}
	done, err := a.install(ctx, run, approve)
	if done == nil {
		return res, err
	}
	res.Changed = diff(done.before, done.after, done.plan)
	for _, r := range sorted(done.before, Record.Present) {
		if now, ok := done.after[r.key()]; !ok || !now.Present() {
			res.Removed = append(res.Removed, r.pkg())
		}
	}
	return res, done.outcome(a, err, len(res.Changed) == 0 && len(res.Removed) == 0)
}
