package main

import (
	"slices"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

// applyPackages brings every selected package item that differs to its state in one pkg.ensure call,
// so the package manager plans and runs the set once (a role's packages often depend on each other).
// The host refuses the whole call before anything runs when one package is held, outside the bounds or
// from an origin not allowed: when the refusal names one of the items, that item fails and the rest are
// asked for again; when it names none (a package the package manager would add or remove with them), or
// the run itself fails, every package item still asked for fails with its code, and the next drift
// check names those still differing.
func (r *run) applyPackages() {
	var wants []word.PackageWant
	var ids []string
	for _, it := range r.items {
		if it.Kind != footprint.KindPackage || r.reports[it.ID].Status != "" {
			continue
		}
		p := r.sel.Packages[it.Index]
		wants = append(wants, word.PackageWant{Name: p.Name, State: p.State, Version: p.Version})
		ids = append(ids, it.ID)
	}
	for len(wants) > 0 {
		_, err := word.Packages().Ensure(wants...)
		if err == nil {
			for _, id := range ids {
				rep := r.reports[id]
				rep.Status, rep.Changes = statusChanged, r.diffs[id]
			}
			return
		}
		e := errcode.From(err, errcode.CapabilityFailed)
		named, _ := e.Details[errcode.DetailPackage].(string)
		i := slices.IndexFunc(wants, func(w word.PackageWant) bool { return w.Name == named })
		if named == "" || i < 0 || e.Code == errcode.PkgFailed {
			for _, id := range ids {
				r.fail(id, err)
			}
			return
		}
		r.fail(ids[i], err)
		wants, ids = slices.Delete(wants, i, i+1), slices.Delete(ids, i, i+1)
	}
}
