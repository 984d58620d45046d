// Command restart_services is the word that restarts the services running code an upgrade replaced,
// from an allow-list: a unit is restarted when the machine names it as running replaced code
// (needrestart, or the unit's own cgroup) or when it is one of the units the caller names and its main
// process, or a child of it, runs replaced code. Units outside the manifest's allow-list are skipped
// and named (never the agent itself, never sshd). Each unit's state is read before and after; a restart
// that fails fails the word with restart_services.failed and the state it left.
package main

import (
	"slices"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	// Units are units to restart if they run replaced code, beyond those the machine names.
	Units []string `json:"units"`
}

type restarted struct {
	Unit        string `json:"unit"`
	BeforePID   int    `json:"before_pid"`
	AfterPID    int    `json:"after_pid"`
	ActiveState string `json:"active_state"`
}

type skipped struct {
	Unit   string `json:"unit"`
	Reason string `json:"reason"`
}

type output struct {
	Restarted []restarted `json:"restarted"`
	Skipped   []skipped   `json:"skipped"`
	// StillStale are the processes still running replaced code afterwards (units not allowed, processes
	// no unit owns).
	StillStale []int `json:"still_stale"`
	RebootOwed bool  `json:"reboot_owed"`
}

func main() {
	word.Run(func(p params) (output, error) {
		out := output{Restarted: []restarted{}, Skipped: []skipped{}, StillStale: []int{}}
		rs, err := word.Packages().Restarts()
		if err != nil {
			return output{}, err
		}
		stale := map[int]bool{}
		var candidates []string
		add := func(u string) {
			if !slices.Contains(candidates, u) {
				candidates = append(candidates, u)
			}
		}
		for _, s := range rs.Services {
			add(s)
		}
		for _, pr := range rs.Processes {
			stale[pr.PID] = true
			if pr.Unit != "" {
				add(pr.Unit)
			}
		}
		parent := map[int]int{}
		for _, pr := range rs.Processes {
			parent[pr.PID] = pr.PPID
		}
		named := map[string]bool{}
		for _, u := range p.Units {
			named[u] = true
			add(u)
		}
		for _, name := range candidates {
			u, err := word.Systemd().Unit(name)
			if word.IsDenied(err) {
				out.Skipped = append(out.Skipped, skipped{Unit: name, Reason: "not in this word's allow-list"})
				continue
			}
			if err != nil {
				return output{}, err // capability.unknown without a service manager: nothing was done
			}
			if u.LoadState == "not-found" {
				out.Skipped = append(out.Skipped, skipped{Unit: name, Reason: "no such unit"})
				continue
			}
			if named[name] && !onReplacedCode(u.MainPID, stale, parent) && !slices.Contains(rs.Services, name) {
				out.Skipped = append(out.Skipped, skipped{Unit: name, Reason: "runs current code"})
				continue
			}
			if err := word.Systemd().Restart(name); err != nil {
				after, _ := word.Systemd().Unit(name)
				word.Log("systemd: %v", err)
				return output{}, word.Fail("restart_services.failed", "%s: %v", name, err).
					With("unit", name).With("after_active_state", after.ActiveState).With("after_result", after.Result)
			}
			after, err := word.Systemd().Unit(name)
			if err != nil {
				return output{}, err
			}
			out.Restarted = append(out.Restarted, restarted{Unit: name, BeforePID: u.MainPID, AfterPID: after.MainPID, ActiveState: after.ActiveState})
		}
		again, err := word.Packages().Restarts()
		if err != nil {
			return output{}, err
		}
		for _, pr := range again.Processes {
			out.StillStale = append(out.StillStale, pr.PID)
		}
		out.RebootOwed = again.Reboot.Required || again.Reboot.KernelOutdated
		return out, nil
	})
}

// onReplacedCode reports whether the unit's main process, or a process it started, runs replaced code.
func onReplacedCode(mainPID int, stale map[int]bool, parent map[int]int) bool {
	if mainPID <= 0 {
		return false
	}
	for pid := range stale {
		if pid == mainPID || parent[pid] == mainPID {
			return true
		}
	}
	return false
}
