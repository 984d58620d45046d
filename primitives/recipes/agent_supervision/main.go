// Command agent_supervision is the recipe that wants the agent supervised: its systemd unit installed,
// enabled (so it starts at boot) and set to restart when it dies (Restart=always or on-failure). Its
// repair, restore_agent_unit, puts back the unit file the release carries in the declared unit folder,
// reloads systemd and enables the unit; a failing verdict hands it that folder.
package main

import (
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type decl struct {
	Unit    string `json:"unit"`
	UnitDir string `json:"unit_dir"`
}

type repair struct {
	UnitDir string `json:"unit_dir,omitempty"`
}

// restarts are the Restart= settings under which systemd restarts a service that exits with an error,
// is killed by a signal, or times out.
var restarts = map[string]bool{"always": true, "on-failure": true}

func main() {
	word.Check(func(d decl) (word.Verdict, error) {
		if d.Unit == "" {
			d.Unit = "lexicon-agent.service"
		}
		u, err := word.Systemd().Unit(d.Unit)
		if err != nil {
			return word.Verdict{}, err // capability.unknown without systemd
		}
		if u.LoadState == "not-found" {
			return word.Failing("%s is not installed: nothing restarts the agent or starts it at boot", d.Unit).
				WithRepair(repair{d.UnitDir}), nil
		}
		var problems []string
		if u.UnitFileState != "enabled" {
			problems = append(problems, "is "+or(u.UnitFileState, "not enabled")+", so it does not start at boot")
		}
		if !restarts[u.Restart] {
			problems = append(problems, "has Restart="+or(u.Restart, "(unset)")+", so systemd does not restart the agent when it dies")
		}
		if len(problems) > 0 {
			return word.Failing("%s %s", d.Unit, strings.Join(problems, " and ")).WithRepair(repair{d.UnitDir}), nil
		}
		return word.Pass("%s is enabled with Restart=%s (%s)", d.Unit, u.Restart, u.ActiveState), nil
	})
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}
