// Command restart_unit is the word that restarts an allow-listed systemd unit and reports its state before and
// after. If systemd refuses, the word fails with restart_unit.failed and the state it left the unit in.
package main

import "github.com/lexicon-fleet/lexicon/sdk/word"

type params struct {
	Unit string `json:"unit"`
}

type state struct {
	ActiveState    string `json:"active_state"`
	SubState       string `json:"sub_state"`
	Result         string `json:"result"`
	MainPID        int    `json:"main_pid"`
	ExecMainStatus int    `json:"exec_main_status"`
}

type output struct {
	Unit   string `json:"unit"`
	Before state  `json:"before"`
	After  state  `json:"after"`
}

func stateOf(name string) (state, word.Unit, error) {
	u, err := word.Systemd().Unit(name)
	if err != nil {
		return state{}, u, err
	}
	return state{u.ActiveState, u.SubState, u.Result, u.MainPID, u.ExecMainStatus}, u, nil
}

func main() {
	word.Run(func(p params) (output, error) {
		before, u, err := stateOf(p.Unit)
		if err != nil {
			return output{}, err // capability.unknown without systemd: nothing was done
		}
		if u.LoadState == "not-found" {
			return output{}, word.Fail("restart_unit.not_found", "unit %s does not exist", p.Unit)
		}
		actErr := word.Systemd().Restart(p.Unit)
		after, _, err := stateOf(p.Unit)
		if err != nil {
			return output{}, err
		}
		if actErr != nil {
			word.Log("systemd: %v", actErr)
			return output{}, word.Fail("restart_unit.failed", "%s: %v", p.Unit, actErr).
				With("after_active_state", after.ActiveState).With("after_result", after.Result)
		}
		return output{Unit: p.Unit, Before: before, After: after}, nil
	})
}
