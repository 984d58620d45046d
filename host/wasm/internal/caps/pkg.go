package caps

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Time caps of the pkg.* changes when neither the manifest nor the request names a shorter one; a
// word's deadline ends them sooner still.
const (
	pkgRefreshTimeout = 10 * time.Minute
	pkgUpgradeTimeout = 15 * time.Minute
	pkgRepairTimeout  = 15 * time.Minute
	maxPkgNames       = 1000
)

// pkgAllowed refuses a pkg.* capability the node's policy does not allow.
func pkgAllowed(w *Word, cap string) error {
	if !w.env.PackagePolicy.AllowsOperation(cap) {
		op := strings.TrimPrefix(cap, "pkg.")
		return errcode.New(errcode.PkgOperationRefused, "%s: this node's policy does not allow the package operation %q", cap, op).
			With(errcode.DetailCap, cap).With(errcode.DetailOperation, op)
	}
	return nil
}

// pkgTimeout is the shortest of the request's, the declared cap and the operation's default.
func pkgTimeout(c manifest.Capability, askedMS int64, deflt time.Duration) time.Duration {
	d := deflt
	if c.TimeoutMS > 0 {
		d = min(d, time.Duration(c.TimeoutMS)*time.Millisecond)
	}
	if askedMS > 0 {
		d = min(d, time.Duration(askedMS)*time.Millisecond)
	}
	return d
}

func pkgQuery(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.PkgQuery
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := pkgAllowed(w, c.Cap); err != nil {
		return nil, err
	}
	st, err := w.env.Packages.Query(ctx, req.Installed)
	if err != nil {
		return nil, err
	}
	// The installed list is what can grow: it is cut to the byte cap, and says so.
	if req.Installed {
		all := st.Installed
		st.Installed = nil
		base, _ := json.Marshal(st)
		// What the list adds around its entries: the key, its brackets and the truncation flag.
		budget := maxBytes(c) - int64(len(base)) - int64(len(`,"installed":[],"installed_truncated":true`))
		for _, p := range all {
			b, _ := json.Marshal(p)
			if budget -= int64(len(b)) + 1; budget < 0 {
				st.InstalledTruncated = true
				break
			}
			st.Installed = append(st.Installed, p)
		}
	}
	return st, nil
}

func pkgRestarts(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.PkgRestarts
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if err := pkgAllowed(w, c.Cap); err != nil {
		return nil, err
	}
	return w.env.Packages.Restarts(ctx)
}

func pkgRefresh(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.PkgRefresh
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.TimeoutMS < 0 {
		return nil, invalid("timeout_ms", "timeout_ms must not be negative")
	}
	if err := pkgAllowed(w, c.Cap); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, pkgTimeout(c, req.TimeoutMS, pkgRefreshTimeout))
	defer cancel()
	return w.env.Packages.Refresh(ctx)
}

func pkgRepair(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.PkgRepair
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.TimeoutMS < 0 {
		return nil, invalid("timeout_ms", "timeout_ms must not be negative")
	}
	if err := pkgAllowed(w, c.Cap); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, pkgTimeout(c, req.TimeoutMS, pkgRepairTimeout))
	defer cancel()
	return w.env.Packages.Repair(ctx)
}

// validPackageName is Debian's package-name syntax: a lowercase letter or digit, then lowercase
// letters, digits and "+-.", 2 to 128 bytes.
func validPackageName(s string) bool {
	if len(s) < 2 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || i > 0 && strings.IndexByte("+-.", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// nameRefused is pkg.name_refused for a package outside the manifest's or the policy's patterns.
func nameRefused(w *Word, c manifest.Capability, name string) error {
	switch {
	case !manifest.MatchAnyPackage(c.Packages, name):
		return errcode.New(errcode.PkgNameRefused, "%s: package %s matches none of the word's package patterns", c.Cap, name).
			With(errcode.DetailPackage, name).With(errcode.DetailReason, "manifest")
	case !w.env.PackagePolicy.AllowsName(name):
		return errcode.New(errcode.PkgNameRefused, "%s: this node's policy does not allow package %s", c.Cap, name).
			With(errcode.DetailPackage, name).With(errcode.DetailReason, "policy")
	}
	return nil
}

// allowedOrigin reports whether one of origins is allowed by both the manifest and the policy, and
// otherwise which of them refused ("manifest" or "policy").
func allowedOrigin(w *Word, c manifest.Capability, origins []capv1.Origin) (bool, string) {
	byManifest := false
	for _, o := range origins {
		if manifest.MatchAnyOrigin(c.Origins, o) {
			byManifest = true
			if w.env.PackagePolicy.AllowsOrigin(o) {
				return true, ""
			}
		}
	}
	if !byManifest {
		return false, "manifest"
	}
	return false, "policy"
}

// describeOrigins prints origins as origin patterns would name them.
func describeOrigins(origins []capv1.Origin) string {
	if len(origins) == 0 {
		return "(no archive: a local package)"
	}
	var parts []string
	for _, o := range origins {
		parts = append(parts, fmt.Sprintf("origin=%s,label=%s,suite=%s,codename=%s,component=%s,site=%s", o.Origin, o.Label, o.Suite, o.Codename, o.Component, o.Site))
	}
	return strings.Join(parts, "; ")
}

func originRefused(c manifest.Capability, name, version string, origins []capv1.Origin, by string) error {
	who := "the word's origin patterns allow"
	if by == "policy" {
		who = "this node's policy allows"
	}
	desc := describeOrigins(origins)
	return errcode.New(errcode.PkgOriginRefused, "%s: %s %s comes from no archive %s (%s)", c.Cap, name, version, who, desc).
		With(errcode.DetailPackage, name).With(errcode.DetailVersion, version).With(errcode.DetailOrigin, desc).With(errcode.DetailReason, by)
}

// pkgUpgrade upgrades named installed packages, each to its newest version from an archive both the
// manifest and the node's policy allow. Names, holds and origins are checked before anything runs,
// and every package the package manager's plan adds is checked the same way before it runs.
func pkgUpgrade(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.PkgUpgrade
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	switch {
	case len(req.Packages) == 0:
		return nil, invalid("packages", "pkg.upgrade needs the packages to upgrade")
	case len(req.Packages) > maxPkgNames:
		return nil, invalid("packages", "at most %d packages in one upgrade", maxPkgNames)
	case req.TimeoutMS < 0:
		return nil, invalid("timeout_ms", "timeout_ms must not be negative")
	}
	for _, n := range req.Packages {
		if !validPackageName(n) {
			return nil, invalid("packages", "%q is not a package name", n).With(errcode.DetailPackage, n)
		}
	}
	if err := pkgAllowed(w, c.Cap); err != nil {
		return nil, err
	}
	for _, n := range req.Packages {
		if err := nameRefused(w, c, n); err != nil {
			return nil, err
		}
	}
	st, err := w.env.Packages.Query(ctx, true)
	if err != nil {
		return nil, err
	}
	installed, held := map[string]bool{}, map[string]bool{}
	for _, p := range st.Installed {
		installed[p.Name] = true
	}
	for _, p := range st.Held {
		held[p.Name] = true
	}
	var targets []pkgmgr.Target
	unchanged := []string{}
	for _, n := range slices.Compact(slices.Sorted(slices.Values(req.Packages))) {
		switch {
		case !installed[n]:
			return nil, errcode.New(errcode.PkgNotInstalled, "%s: package %s is not installed; an upgrade only upgrades", c.Cap, n).With(errcode.DetailPackage, n)
		case held[n]:
			return nil, errcode.New(errcode.PkgHeld, "%s: package %s is held by this machine's admin; the host never overrides a hold", c.Cap, n).With(errcode.DetailPackage, n)
		}
		found := false
		for _, u := range st.Upgrades {
			if u.Name != n {
				continue
			}
			found = true
			picked := ""
			refusedBy := ""
			for _, v := range u.Versions {
				ok, by := allowedOrigin(w, c, v.Origins)
				if ok {
					picked = v.Version
					break
				}
				if refusedBy == "" || by == "policy" {
					refusedBy = by
				}
			}
			if picked == "" {
				return nil, originRefused(c, n, u.Versions[0].Version, u.Versions[0].Origins, refusedBy)
			}
			targets = append(targets, pkgmgr.Target{Name: u.Name, Arch: u.Arch, Version: picked})
		}
		if !found {
			unchanged = append(unchanged, n)
		}
	}
	approve := func(ch pkgmgr.Change) error {
		if err := nameRefused(w, c, ch.Name); err != nil {
			return err
		}
		if ok, by := allowedOrigin(w, c, ch.Origins); !ok {
			return originRefused(c, ch.Name, ch.To, ch.Origins, by)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, pkgTimeout(c, req.TimeoutMS, pkgUpgradeTimeout))
	defer cancel()
	res, err := w.env.Packages.Upgrade(ctx, targets, approve)
	res.Unchanged = unchanged
	if err != nil {
		return nil, err
	}
	return res, nil
}
