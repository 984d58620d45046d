// Package drift compares a footprint with the machine, item by item, through a word's look
// capabilities (fs.digest, account.read, systemd.unit, sysctl.read, nft.read, pkg.query). The converge word
// decides what to change with it and the drift recipes what to report, so a drift is exactly what a
// converge would change. It builds for wasip1 on sdk alone.
//
//	for _, f := range drift.Observe(fp) {
//		if f.Err == nil && len(f.Diffs) > 0 { fmt.Println(f.Item.ID, f.Diffs) }
//	}
package drift

import (
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Finding is one item as the machine holds it: how it differs (none: it holds), or why it could not
// be looked at.
type Finding struct {
	Item  footprint.Item
	Diffs []string
	Err   error
}

// Observe looks at every item of fp, in the order footprint.Items gives.
func Observe(fp *footprint.Footprint) []Finding {
	var keys []string
	for _, s := range fp.Sysctl {
		keys = append(keys, s.Key)
	}
	var sysctls word.Sysctls
	var sysctlErr error
	if len(keys) > 0 {
		sysctls, sysctlErr = word.ReadSysctl(keys)
	}
	var pkgs *word.PkgState
	var pkgErr error
	var out []Finding
	for _, it := range footprint.Items(fp) {
		f := Finding{Item: it}
		switch it.Kind {
		case footprint.KindGroup:
			var g word.GroupState
			if g, f.Err = word.Account().Group(it.Key); f.Err == nil {
				f.Diffs = footprint.CompareGroup(fp.Groups[it.Index], g)
			}
		case footprint.KindUser:
			var u word.UserState
			if u, f.Err = word.Account().User(it.Key); f.Err == nil {
				f.Diffs = footprint.CompareUser(fp.Users[it.Index], u)
			}
		case footprint.KindPackage:
			if pkgs == nil && pkgErr == nil {
				var st word.PkgState
				if st, pkgErr = word.Packages().Query(true); pkgErr == nil {
					pkgs = &st
				}
			}
			f.Diffs, f.Err = comparePackage(fp.Packages[it.Index], pkgs, pkgErr)
		case footprint.KindFile:
			var st word.FileState
			if st, f.Err = word.FS().Digest(it.Key); f.Err == nil {
				f.Diffs = footprint.CompareFile(fp.Files[it.Index], st)
			}
		case footprint.KindSysctl:
			if f.Err = sysctlErr; f.Err == nil {
				v, ok := sysctls.Values[it.Key]
				f.Diffs = footprint.CompareSysctl(fp.Sysctl[it.Index], v, ok)
			}
		case footprint.KindFirewall:
			var fw word.Firewall
			if fw, f.Err = word.ReadFirewall(); f.Err == nil {
				f.Diffs = footprint.CompareFirewall(*fp.Firewall, fw)
			}
		case footprint.KindUnit:
			var u word.Unit
			if u, f.Err = word.Systemd().Unit(it.Key); f.Err == nil {
				f.Diffs = footprint.CompareUnit(fp.Units[it.Index], u)
			}
		}
		out = append(out, f)
	}
	return out
}

// Owed adds to findings what the record says converge still owes a unit (a restart or reload for a
// file it changed, when it was stopped before it could): the unit drifts until it is done.
func Owed(findings []Finding, pending []capv1.Pending) []Finding {
	for i, f := range findings {
		if f.Item.Kind != footprint.KindUnit || f.Err != nil {
			continue
		}
		for _, p := range pending {
			if p.Unit == f.Item.Key {
				findings[i].Diffs = append(findings[i].Diffs, "owes a "+p.Action)
			}
		}
	}
	return findings
}

// Summary is one line naming the drifted items and how ("file:/etc/a (content), unit:b.service
// (inactive)"), at most max bytes, cut at an item with the count of the rest.
func Summary(findings []Finding, max int) string {
	var parts []string
	for _, f := range findings {
		if f.Err == nil && len(f.Diffs) > 0 {
			parts = append(parts, f.Item.ID+" ("+strings.Join(f.Diffs, "; ")+")")
		}
	}
	var b strings.Builder
	for i, p := range parts {
		sep := ""
		if i > 0 {
			sep = ", "
		}
		rest := " and " + itoa(len(parts)-i) + " more"
		if b.Len()+len(sep)+len(p) > max-len(rest) {
			b.WriteString(rest)
			break
		}
		b.WriteString(sep + p)
	}
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

// Check is the drift recipes' check: it compares the items of the footprint the node last converged
// to whose enforce is enforced with the machine, and fails naming every item that drifted and how;
// with enforced, the failing verdict carries the converge word's params to repair those items. Items
// this machine cannot compare (capability.unknown: no package capability, no systemd) are counted and
// left out; an item that cannot be compared for another reason makes the verdict unknown.
func Check(enforced bool) (word.Verdict, error) {
	rec, err := word.Footprint().Read()
	if err != nil {
		return word.Verdict{}, err
	}
	if len(rec.Footprint) == 0 {
		return word.Pass("no footprint has been converged on this node"), nil
	}
	fp, err := footprint.Decode(rec.Footprint)
	if err != nil {
		return word.Unknown("the recorded footprint does not decode: %v", err), nil
	}
	ids := map[string]bool{}
	for _, it := range footprint.Items(fp) {
		if it.Enforce == enforced {
			ids[it.ID] = true
		}
	}
	findings := Owed(Observe(footprint.Select(fp, ids)), rec.Pending)
	var drifted []string
	checked, unknown := 0, 0
	for _, f := range findings {
		switch {
		case f.Err != nil && word.IsUnknown(f.Err):
			unknown++
		case f.Err != nil:
			return word.Unknown("%s cannot be compared: %v", f.Item.ID, f.Err), nil
		case len(f.Diffs) > 0:
			drifted = append(drifted, f.Item.ID)
			checked++
		default:
			checked++
		}
	}
	if len(drifted) > 0 {
		v := word.Failing("drift: %s", Summary(findings, word.MaxDetail-8))
		if enforced {
			v = v.WithRepair(map[string]any{"mode": "apply", "items": drifted})
		}
		return v, nil
	}
	if checked == 0 && unknown > 0 {
		return word.Unknown("none of the %d items can be compared on this node", unknown), nil
	}
	return word.Pass("%d items as converged (%d not comparable here)", checked, unknown), nil
}

// comparePackage compares a package item with the package database as pkg.query gave it. A database
// this word may not read (the node's policy leaves query out) or could not read whole (the list was cut
// at the byte cap) makes the item not comparable (capability.unknown), as a machine without a package
// manager does.
func comparePackage(p footprint.Package, st *word.PkgState, err error) ([]string, error) {
	notComparable := func(why string) error {
		return errcode.New(errcode.CapabilityUnknown, "package %s cannot be compared here: %s", p.Name, why).With(errcode.DetailReason, why)
	}
	if err != nil {
		if code := errcode.Code(err); code == errcode.PkgOperationRefused || code == errcode.CapabilityDenied {
			return nil, notComparable(code)
		}
		return nil, err
	}
	for _, pkg := range st.Installed {
		if pkg.Name != p.Name {
			continue
		}
		if pkg.Status != "" && pkg.Status != "installed" {
			return []string{"left " + pkg.Status + " by an interrupted run"}, nil
		}
		return footprint.ComparePackage(p, true, pkg.Version), nil
	}
	if st.InstalledTruncated {
		return nil, notComparable("the installed list was cut at the byte cap")
	}
	return footprint.ComparePackage(p, false, ""), nil
}
