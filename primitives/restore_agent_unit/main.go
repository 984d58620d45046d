// Command restore_agent_unit is agent_supervision's repair: it puts the agent's systemd unit back in
// the unit folder (/etc/systemd/system) as the release carries it, when the file there was edited or
// removed, then reloads systemd and enables the unit. The unit's bytes are embedded in this module, so
// they are exactly the ones the release's publisher signed; nothing on the node supplies them. It
// writes only that one file: the manifest's fs.write root is the unit folder and the name is fixed.
// A drop-in (lexicon-agent.service.d/) an operator wrote is left alone; if it still turns restarts
// off, the check keeps failing and the loop escalates to a person.
package main

import (
	_ "embed"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

// UnitName is the unit this word restores; its content is the agent's own, from agent/cmd/lexicon-agent.
const UnitName = "lexicon-agent.service"

//go:embed lexicon-agent.service
var unitFile []byte

type params struct {
	UnitDir string `json:"unit_dir"`
}

type output struct {
	Unit          string `json:"unit"`
	Restored      string `json:"restored"` // unchanged, edited or missing: what the file was before
	SHA256        string `json:"sha256,omitempty"`
	UnitFileState string `json:"unit_file_state"`
	Restart       string `json:"restart"`
}

func main() {
	word.Run(func(p params) (output, error) {
		if p.UnitDir == "" {
			p.UnitDir = "/etc/systemd/system"
		}
		path := strings.TrimSuffix(p.UnitDir, "/") + "/" + UnitName
		out := output{Unit: UnitName, Restored: "unchanged"}
		old, whole, err := word.FS().Read(path)
		switch {
		case word.IsNotFound(err):
			out.Restored = "missing"
		case err != nil:
			return output{}, err
		case !whole || string(old) != string(unitFile):
			out.Restored = "edited"
		}
		if out.Restored != "unchanged" {
			w, err := word.FS().Write(path, unitFile, 0o644)
			if err != nil {
				return output{}, err
			}
			out.SHA256 = w.SHA256
		}
		if err := word.Systemd().Enable(UnitName); err != nil {
			return output{}, err // capability.unknown without systemd
		}
		u, err := word.Systemd().Unit(UnitName)
		if err != nil {
			return output{}, err
		}
		out.UnitFileState, out.Restart = u.UnitFileState, u.Restart
		if u.UnitFileState != "enabled" || (u.Restart != "on-failure" && u.Restart != "always") {
			return output{}, word.Fail("restore_agent_unit.still_unsupervised", "%s is %s with Restart=%s after it was put back: a drop-in or a mask overrides it",
				UnitName, u.UnitFileState, u.Restart).With("unit_file_state", u.UnitFileState).With("restart", u.Restart)
		}
		return out, nil
	})
}
