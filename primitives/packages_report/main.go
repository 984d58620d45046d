// Command packages_report is the word that reports a machine's package security: its release and when
// that release's support ends, the security fixes and other upgrades waiting, packages a run left half
// done, held packages, processes running code an upgrade replaced, whether a reboot is owed, and when
// the package lists were refreshed and unattended-upgrades last ran. A machine whose package manager
// the host does not know says so (known: false); nothing is guessed.
package main

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/osrelease"
	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct{}

type release struct {
	ID         string `json:"id"`
	VersionID  string `json:"version_id"`
	Codename   string `json:"codename,omitempty"`
	PrettyName string `json:"pretty_name"`
	// SupportEnd is the end of the release's standard security support (YYYY-MM-DD), ExtendedEnd the
	// end of the long-term support after it; SupportSource where the dates are published.
	SupportEnd    string `json:"support_end,omitempty"`
	ExtendedEnd   string `json:"extended_support_end,omitempty"`
	SupportSource string `json:"support_source,omitempty"`
	// SupportEnded: standard support has ended (null when the end is not known).
	SupportEnded *bool `json:"support_ended"`
}

type upgrade struct {
	Name      string `json:"name"`
	Installed string `json:"installed"`
	Candidate string `json:"candidate"`
	Origin    string `json:"origin"`
	// Held: the admin holds the package; the fix waits until the hold is lifted.
	Held bool `json:"held,omitempty"`
}

type pkg struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Status  string `json:"status,omitempty"`
}

type service struct {
	Unit  string   `json:"unit"`
	PIDs  []int    `json:"pids"`
	Files []string `json:"files"`
}

type process struct {
	PID     int      `json:"pid"`
	Command string   `json:"command"`
	Exe     string   `json:"exe,omitempty"`
	Unit    string   `json:"unit,omitempty"`
	Files   []string `json:"files"`
}

type reboot struct {
	Owed           bool     `json:"owed"`
	Required       bool     `json:"required"`
	Packages       []string `json:"packages,omitempty"`
	RunningKernel  string   `json:"running_kernel"`
	NewestKernel   string   `json:"newest_kernel,omitempty"`
	KernelOutdated bool     `json:"kernel_outdated"`
}

type lock struct {
	Path    string `json:"path"`
	PID     int    `json:"pid,omitempty"`
	Command string `json:"command,omitempty"`
}

type summary struct {
	SecurityUpgrades int  `json:"security_upgrades"`
	OtherUpgrades    int  `json:"other_upgrades"`
	HalfConfigured   int  `json:"half_configured"`
	Held             int  `json:"held"`
	StaleProcesses   int  `json:"stale_processes"`
	RebootOwed       bool `json:"reboot_owed"`
}

type output struct {
	Known            bool      `json:"known"`
	Unknown          []string  `json:"unknown"`
	Backend          string    `json:"backend,omitempty"`
	OS               release   `json:"os"`
	SecurityUpgrades []upgrade `json:"security_upgrades"`
	OtherUpgrades    []upgrade `json:"other_upgrades"`
	HalfConfigured   []pkg     `json:"half_configured"`
	Held             []pkg     `json:"held"`
	// RestartMethod says what found the stale services and processes: needrestart, or the host's
	// own scan of /proc ("proc").
	RestartMethod  string    `json:"restart_method,omitempty"`
	StaleServices  []service `json:"stale_services"`
	StaleProcesses []process `json:"stale_processes"`
	Reboot         reboot    `json:"reboot"`
	// ListsRefreshed and UnattendedUpgrades are RFC 3339 times, null when never or not known.
	ListsRefreshed     *time.Time `json:"lists_refreshed"`
	UnattendedUpgrades *time.Time `json:"unattended_upgrades"`
	// PackageRun is the apt or dpkg run holding the lock as the report was made, if any.
	PackageRun *lock   `json:"package_run"`
	Summary    summary `json:"summary"`
}

// originText names where a version comes from, as apt's own output does: label and suite.
func originText(origins []word.Origin) string {
	var parts []string
	for _, o := range origins {
		s := o.Label
		if o.Suite != "" {
			s += ":" + o.Suite
		}
		if o.Site != "" {
			s += " (" + o.Site + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func describe(st word.PkgState, now time.Time) release {
	r := release{ID: st.OS.ID, VersionID: st.OS.VersionID, Codename: st.OS.VersionCodename, PrettyName: st.OS.PrettyName}
	rel := osrelease.Release{ID: st.OS.ID, VersionID: st.OS.VersionID}
	if t, err := time.Parse(time.DateOnly, st.OS.SupportEnd); err == nil {
		rel.SupportEnd = t
	}
	if s, ok := osrelease.SupportEnd(rel); ok {
		r.SupportEnd, r.SupportSource = s.Standard.Format(time.DateOnly), s.Source
		if !s.Extended.IsZero() {
			r.ExtendedEnd = s.Extended.Format(time.DateOnly)
		}
		ended := !now.Before(s.Standard)
		r.SupportEnded = &ended
	}
	return r
}

func main() {
	word.Run(func(params) (output, error) {
		out := output{Unknown: []string{}, SecurityUpgrades: []upgrade{}, OtherUpgrades: []upgrade{}, HalfConfigured: []pkg{},
			Held: []pkg{}, StaleServices: []service{}, StaleProcesses: []process{}}
		st, err := word.Packages().Query(false)
		if word.IsUnknown(err) {
			out.Unknown = append(out.Unknown, "packages")
			word.Log("packages: %v", err)
		} else if err != nil {
			return output{}, err
		} else {
			out.Known, out.Backend = true, st.Backend
			out.OS = describe(st, time.Now())
			held := map[string]bool{}
			for _, h := range st.Held {
				held[h.Name] = true
				out.Held = append(out.Held, pkg{Name: h.Name, Version: h.Version})
			}
			for _, u := range st.Upgrades {
				if u.Security {
					v := u.SecurityVersion
					var origins []word.Origin
					for _, o := range u.Versions {
						if o.Version == v {
							origins = o.Origins
						}
					}
					out.SecurityUpgrades = append(out.SecurityUpgrades, upgrade{Name: u.Name, Installed: u.Installed, Candidate: v, Origin: originText(origins), Held: held[u.Name]})
				} else {
					out.OtherUpgrades = append(out.OtherUpgrades, upgrade{Name: u.Name, Installed: u.Installed, Candidate: u.Candidate, Origin: originText(u.Origins), Held: held[u.Name]})
				}
			}
			for _, h := range st.HalfConfigured {
				out.HalfConfigured = append(out.HalfConfigured, pkg{Name: h.Name, Version: h.Version, Status: h.Status})
			}
			out.ListsRefreshed, out.UnattendedUpgrades = st.ListsRefreshed, st.UnattendedUpgrades
			if st.Lock != nil {
				out.PackageRun = &lock{Path: st.Lock.Path, PID: st.Lock.PID, Command: st.Lock.Command}
			}
		}
		rs, err := word.Packages().Restarts()
		if word.IsUnknown(err) {
			out.Unknown = append(out.Unknown, "restarts")
		} else if err != nil {
			return output{}, err
		} else {
			out.RestartMethod = rs.Method
			units := map[string]*service{}
			unit := func(name string) *service {
				if units[name] == nil {
					units[name] = &service{Unit: name, PIDs: []int{}, Files: []string{}}
				}
				return units[name]
			}
			for _, s := range rs.Services {
				unit(s)
			}
			for _, p := range rs.Processes {
				out.StaleProcesses = append(out.StaleProcesses, process{PID: p.PID, Command: p.Command, Exe: p.Exe, Unit: p.Unit, Files: p.Files})
				if p.Unit != "" {
					s := unit(p.Unit)
					s.PIDs = append(s.PIDs, p.PID)
					for _, f := range p.Files {
						if !slices.Contains(s.Files, f) {
							s.Files = append(s.Files, f)
						}
					}
				}
			}
			for _, name := range slices.Sorted(maps.Keys(units)) {
				out.StaleServices = append(out.StaleServices, *units[name])
			}
			rb := rs.Reboot
			out.Reboot = reboot{Owed: rb.Required || rb.KernelOutdated, Required: rb.Required, Packages: rb.Packages,
				RunningKernel: rb.RunningKernel, NewestKernel: rb.NewestKernel, KernelOutdated: rb.KernelOutdated}
		}
		out.Summary = summary{SecurityUpgrades: len(out.SecurityUpgrades), OtherUpgrades: len(out.OtherUpgrades),
			HalfConfigured: len(out.HalfConfigured), Held: len(out.Held), StaleProcesses: len(out.StaleProcesses), RebootOwed: out.Reboot.Owed}
		return out, nil
	})
}
