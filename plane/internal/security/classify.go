package security

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Levels of a node's row, worst first.
const (
	Red   = "red"
	Amber = "amber"
	Grey  = "grey"
	Green = "green"
)

// rank orders levels for sorting: red rows first, then amber, grey, green.
func rank(level string) int {
	switch level {
	case Red:
		return 0
	case Amber:
		return 1
	case Grey:
		return 2
	}
	return 3
}

// Config says what counts as critical and how long things may wait.
type Config struct {
	// Critical are package name patterns (path.Match: openssl, linux-image-*) whose security fix
	// waiting makes a node red.
	Critical []string
	// CriticalUnits are units whose replaced code makes a node red; a unit named after a critical
	// package (sudo.service for sudo) is critical too.
	CriticalUnits []string
	// RebootAfter is how long a reboot may be owed before the node is amber.
	RebootAfter time.Duration
	// SilentAfter is how old the newest report may be before the node is amber.
	SilentAfter time.Duration
	// FixAge is how long a critical fix may wait before plane:critical_fix_waiting opens.
	FixAge time.Duration
}

// DefaultConfig is the list: the TLS library, the SSH server, the C library, sudo and the
// kernel; sshd's units; a day for a reboot; two hours of silence; a day for a critical fix.
func DefaultConfig() Config {
	return Config{
		Critical:      []string{"openssl", "libssl*", "openssh-server", "libc6", "sudo", "linux-image-*"},
		CriticalUnits: []string{"ssh.service", "sshd.service"},
		RebootAfter:   24 * time.Hour,
		SilentAfter:   2 * time.Hour,
		FixAge:        24 * time.Hour,
	}
}

// Report is what the classifier reads of a packages_report output.
type Report struct {
	Known            bool      `json:"known"`
	Unknown          []string  `json:"unknown"`
	SecurityUpgrades []Upgrade `json:"security_upgrades"`
	OtherUpgrades    []Upgrade `json:"other_upgrades"`
	HalfConfigured   []Package `json:"half_configured"`
	StaleServices    []Service `json:"stale_services"`
	StaleProcesses   []struct {
		PID     int    `json:"pid"`
		Command string `json:"command"`
		Unit    string `json:"unit"`
	} `json:"stale_processes"`
	Reboot struct {
		Owed bool `json:"owed"`
	} `json:"reboot"`
	OS struct {
		PrettyName string `json:"pretty_name"`
	} `json:"os"`
}

type Upgrade struct {
	Name      string `json:"name"`
	Installed string `json:"installed"`
	Candidate string `json:"candidate"`
	Origin    string `json:"origin"`
}

type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Status  string `json:"status"`
}

type Service struct {
	Unit string `json:"unit"`
}

// Input is one node as the classifier sees it.
type Input struct {
	// HasWord: the node's vocabulary has packages_report.
	HasWord bool
	// Report is its newest report (nil when none); ReportedAt when it finished.
	Report     *Report
	ReportedAt time.Time
	// OwedBefore: the newest report at least RebootAfter old owed a reboot too.
	OwedBefore bool
	// FixesBefore are the security fixes the newest report at least FixAge old had waiting.
	FixesBefore []Upgrade
	// Served is what the node serves by its roles; empty when it carries none.
	Served Served
	Now    time.Time
}

// Served is what a node serves: the packages present and the units kept enabled or started in the
// footprint its roles render, each with the roles that name it. On that node alone, a served package
// is critical as the Config's are, and a served unit (or one named after a served package) is a
// critical unit.
type Served struct {
	Packages map[string][]string
	Units    map[string][]string
}

// unit answers the roles serving a unit: those naming it, or a package it is named after.
func (s Served) unit(unit string) ([]string, bool) {
	if roles, ok := s.Units[unit]; ok {
		return roles, true
	}
	roles, ok := s.Packages[strings.TrimSuffix(unit, ".service")]
	return roles, ok
}

// servedBy is the tail of a reason about something served: "served by role web".
func servedBy(roles []string) string {
	if len(roles) == 1 {
		return "served by role " + roles[0]
	}
	return "served by roles " + strings.Join(roles, ", ")
}

// Reason is one thing wrong with a node, at its level. Kind names it for machines: critical_fix,
// critical_old_code, half_done, fix, reboot_owed, silent, old_code, no_word, no_report, unknown.
type Reason struct {
	Level string `json:"level"`
	Kind  string `json:"kind"`
	Text  string `json:"text"`
}

// Verdict is a node's level and every reason for it, worst first. CriticalAged names the critical
// fixes that were already waiting FixAge ago and still are; OldCode the units on replaced code.
type Verdict struct {
	Level        string
	Reasons      []Reason
	CriticalAged []string
	OldCode      []string
}

// Critical reports whether a package name matches one of c's patterns.
func (c Config) critical(name string) bool {
	return slices.ContainsFunc(c.Critical, func(p string) bool { ok, _ := path.Match(p, name); return ok })
}

func (c Config) criticalUnit(unit string) bool {
	return slices.Contains(c.CriticalUnits, unit) || c.critical(strings.TrimSuffix(unit, ".service"))
}

// Classify judges one node. It is a pure function of its input: red when a critical fix waits, a
// critical unit runs replaced code or a package run was left half done (a package or unit the node
// serves by its roles is critical on it, and its reason names the roles); amber when another fix waits,
// a reboot has been owed longer than RebootAfter, the newest report is older than SilentAfter, or
// another unit runs replaced code; grey when nothing was reported or the node lacks the word, saying
// which; green otherwise.
func Classify(c Config, in Input) Verdict {
	var v Verdict
	add := func(level, kind, format string, args ...any) {
		v.Reasons = append(v.Reasons, Reason{Level: level, Kind: kind, Text: fmt.Sprintf(format, args...)})
	}
	switch {
	case !in.HasWord && in.Report == nil:
		add(Grey, "no_word", "the node's vocabulary lacks packages_report: its release or agent does not carry the word")
	case in.Report == nil:
		add(Grey, "no_report", "no packages_report has reported yet")
	case !in.Report.Known:
		add(Grey, "unknown", "the node does not know its package manager (%s)", strings.Join(in.Report.Unknown, ", "))
	}
	if r := in.Report; r != nil && r.Known {
		aged := map[string]bool{}
		for _, u := range in.FixesBefore {
			aged[u.Name] = true
		}
		var other []string
		for _, u := range r.SecurityUpgrades {
			served, isServed := in.Served.Packages[u.Name]
			if isServed || c.critical(u.Name) {
				text := fmt.Sprintf("critical fix waiting: %s %s → %s (%s)", u.Name, u.Installed, u.Candidate, u.Origin)
				if isServed {
					text += ", " + servedBy(served)
				}
				add(Red, "critical_fix", "%s", text)
				if aged[u.Name] {
					v.CriticalAged = append(v.CriticalAged, u.Name)
				}
				continue
			}
			other = append(other, u.Name)
		}
		for _, p := range r.HalfConfigured {
			add(Red, "half_done", "a package run was left half done: %s %s is %s", p.Name, p.Version, p.Status)
		}
		var oldCode []string
		for _, s := range r.StaleServices {
			v.OldCode = append(v.OldCode, s.Unit)
			if served, ok := in.Served.unit(s.Unit); ok {
				add(Red, "critical_old_code", "critical service %s runs replaced code, %s", s.Unit, servedBy(served))
			} else if c.criticalUnit(s.Unit) {
				add(Red, "critical_old_code", "critical service %s runs replaced code", s.Unit)
			} else {
				oldCode = append(oldCode, s.Unit)
			}
		}
		if len(other) > 0 {
			add(Amber, "fix", "%d security fix(es) waiting: %s", len(other), strings.Join(other, ", "))
		}
		if r.Reboot.Owed && in.OwedBefore {
			add(Amber, "reboot_owed", "a reboot has been owed for over %s", c.RebootAfter)
		}
		if len(oldCode) > 0 {
			add(Amber, "old_code", "services run replaced code: %s", strings.Join(oldCode, ", "))
		}
	}
	if in.Report != nil && in.Now.Sub(in.ReportedAt) > c.SilentAfter {
		add(Amber, "silent", "no report for %s (the last at %s)", in.Now.Sub(in.ReportedAt).Truncate(time.Minute), in.ReportedAt.UTC().Format(time.RFC3339))
	}
	v.Level = Green
	for _, r := range v.Reasons {
		if rank(r.Level) < rank(v.Level) {
			v.Level = r.Level
		}
	}
	slices.SortStableFunc(v.Reasons, func(a, b Reason) int { return rank(a.Level) - rank(b.Level) })
	return v
}
