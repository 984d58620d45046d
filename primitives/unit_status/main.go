// Command unit_status is the word that reports one systemd unit's state: load, active and sub state,
// result and main exit status. On a machine without systemd it says the state is unknown.
package main

import "github.com/lexicon-fleet/lexicon/sdk/word"

type params struct {
	Unit string `json:"unit"`
}

type output struct {
	Unit           string `json:"unit"`
	Known          bool   `json:"known"`
	Reason         string `json:"reason,omitempty"`
	Description    string `json:"description,omitempty"`
	LoadState      string `json:"load_state"`
	ActiveState    string `json:"active_state"`
	SubState       string `json:"sub_state"`
	Result         string `json:"result"`
	ExecMainStatus int    `json:"exec_main_status"`
	ExecMainCode   string `json:"exec_main_code,omitempty"`
	MainPID        int    `json:"main_pid"`
	NRestarts      int    `json:"n_restarts"`
	ActiveSince    string `json:"active_since,omitempty"`
}

func main() {
	word.Run(func(p params) (output, error) {
		u, err := word.Systemd().Unit(p.Unit)
		if word.IsUnknown(err) {
			return output{Unit: p.Unit, Known: false, Reason: err.Error(),
				LoadState: "unknown", ActiveState: "unknown", SubState: "unknown", Result: "unknown"}, nil
		}
		if err != nil {
			return output{}, err
		}
		return output{
			Unit: p.Unit, Known: true, Description: u.Description, LoadState: u.LoadState,
			ActiveState: u.ActiveState, SubState: u.SubState, Result: u.Result,
			ExecMainStatus: u.ExecMainStatus, ExecMainCode: u.ExecMainCode, MainPID: u.MainPID,
			NRestarts: u.NRestarts, ActiveSince: u.ActiveEnter,
		}, nil
	})
}
