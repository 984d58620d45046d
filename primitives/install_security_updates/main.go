// Command install_security_updates is the word that installs the machine's security fixes, and only
// those: it refreshes the package lists, finishes a run left half done, installs every security
// upgrade waiting (each from a security archive its manifest allows; held packages stay held), and
// reports what changed, what now runs replaced code and whether a reboot is owed. A machine with
// nothing to install passes and says so.
//
// A failed refresh is reported and the fixes already known are still installed. A half-done run that
// cannot be finished, or an upgrade that fails, fails the word with the package manager's code
// (pkg.failed names the packages). The fixes are installed in one upgrade, checked whole before it
// runs: a fix from an archive the manifest or the node's policy does not allow (pkg.origin_refused),
// or one outside the node's package names (pkg.name_refused), fails the word naming the package, and
// nothing is installed. Another package run holding the lock is pkg.locked, before anything is done.
package main

import (
	"slices"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct{}

type change struct {
	Name   string `json:"name"`
	From   string `json:"from,omitempty"`
	To     string `json:"to"`
	Origin string `json:"origin"`
}

type stale struct {
	PID     int      `json:"pid"`
	Command string   `json:"command"`
	Unit    string   `json:"unit,omitempty"`
	Files   []string `json:"files"`
}

type output struct {
	// NothingToInstall: no security fix was waiting (held ones aside).
	NothingToInstall bool `json:"nothing_to_install"`
	// RefreshFailed is why refreshing the lists failed, if it did; the fixes known were installed.
	RefreshFailed string   `json:"refresh_failed,omitempty"`
	Warnings      []string `json:"warnings"`
	// Repaired are the packages a half-done run left, configured before anything else.
	Repaired []string `json:"repaired"`
	// Installed is every package the upgrade installed or replaced.
	Installed []change `json:"installed"`
	// HeldBack are packages with a security fix waiting that the admin holds.
	HeldBack []string `json:"held_back"`
	// NeedRestart are the units and processes running replaced code now.
	NeedRestart    []string `json:"need_restart"`
	StaleProcesses []stale  `json:"stale_processes"`
	RebootOwed     bool     `json:"reboot_owed"`
	RebootPackages []string `json:"reboot_packages,omitempty"`
	KernelOutdated bool     `json:"kernel_outdated"`
	SecurityAfter  int      `json:"security_upgrades_left"`
}

func originText(origins []word.Origin) string {
	if len(origins) == 0 {
		return ""
	}
	return origins[0].Label + ":" + origins[0].Suite
}

func main() {
	word.Run(func(params) (output, error) {
		out := output{Warnings: []string{}, Repaired: []string{}, Installed: []change{}, HeldBack: []string{},
			NeedRestart: []string{}, StaleProcesses: []stale{}}
		ref, err := word.Packages().Refresh()
		switch {
		case errcode.Has(err, errcode.PkgRefreshFailed):
			out.RefreshFailed = errcode.From(err, "").Message
			word.Log("refresh: %s", out.RefreshFailed)
		case err != nil:
			return output{}, err // pkg.locked among them: nothing was done
		default:
			out.Warnings = append(out.Warnings, ref.Warnings...)
		}
		rep, err := word.Packages().Repair()
		if err != nil {
			return output{}, err
		}
		for _, p := range rep.Configured {
			out.Repaired = append(out.Repaired, p.Name)
		}
		st, err := word.Packages().Query(false)
		if err != nil {
			return output{}, err
		}
		held := map[string]bool{}
		for _, h := range st.Held {
			held[h.Name] = true
		}
		var names []string
		for _, u := range st.Upgrades {
			switch {
			case !u.Security:
			case held[u.Name]:
				out.HeldBack = append(out.HeldBack, u.Name)
			case !slices.Contains(names, u.Name):
				names = append(names, u.Name)
			}
		}
		out.NothingToInstall = len(names) == 0
		if len(names) > 0 {
			word.Log("installing the security fixes of %v", names)
			res, err := word.Packages().Upgrade(names...)
			if err != nil {
				return output{}, err
			}
			for _, c := range res.Changed {
				out.Installed = append(out.Installed, change{Name: c.Name, From: c.From, To: c.To, Origin: originText(c.Origins)})
			}
		}
		after, err := word.Packages().Query(false)
		if err != nil {
			return output{}, err
		}
		for _, u := range after.Upgrades {
			if u.Security && !held[u.Name] {
				out.SecurityAfter++
			}
		}
		rs, err := word.Packages().Restarts()
		if err != nil {
			return output{}, err
		}
		out.NeedRestart = append(out.NeedRestart, rs.Services...)
		for _, p := range rs.Processes {
			out.StaleProcesses = append(out.StaleProcesses, stale{PID: p.PID, Command: p.Command, Unit: p.Unit, Files: p.Files})
			if p.Unit != "" && !slices.Contains(out.NeedRestart, p.Unit) {
				out.NeedRestart = append(out.NeedRestart, p.Unit)
			}
		}
		slices.Sort(out.NeedRestart)
		out.RebootOwed = rs.Reboot.Required || rs.Reboot.KernelOutdated
		out.RebootPackages, out.KernelOutdated = rs.Reboot.Packages, rs.Reboot.KernelOutdated
		return out, nil
	})
}
