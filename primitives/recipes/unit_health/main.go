// Command unit_health is the recipe that wants the declared units healthy: each one installed and
// enabled on this machine is active, and answers its HTTP probe when it declares one. The declaration
// lists units in dependency order (databases before what uses them), and a failing verdict asks its
// repair word, restart_unit, to restart the first failing one: restarting what others depend on first
// often heals the rest.
package main

import (
	"fmt"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type unit struct {
	Unit  string `json:"unit"`
	Probe string `json:"probe,omitempty"`
}

type decl struct {
	Units []unit `json:"units"`
}

// repair is restart_unit's params.
type repair struct {
	Unit string `json:"unit"`
}

// watched are the unit-file states of a unit someone meant to run: a disabled or masked unit is off on
// purpose, and restarting it would overrule that.
var watched = map[string]bool{"enabled": true, "enabled-runtime": true}

func main() {
	word.Check(func(d decl) (word.Verdict, error) {
		var healthy, failing, skipped []string
		first := ""
		for _, u := range d.Units {
			st, err := word.Systemd().Unit(u.Unit)
			if err != nil {
				return word.Verdict{}, err // capability.unknown without systemd: never a guess
			}
			if st.LoadState == "not-found" || !watched[st.UnitFileState] {
				skipped = append(skipped, u.Unit)
				continue
			}
			if problem := health(u, st); problem != "" {
				failing = append(failing, u.Unit+" "+problem)
				if first == "" {
					first = u.Unit
				}
				continue
			}
			healthy = append(healthy, u.Unit)
		}
		if first != "" {
			return word.Failing("%s", strings.Join(failing, "; ")).WithRepair(repair{Unit: first}), nil
		}
		if len(healthy) == 0 {
			return word.Pass("none of the %d declared units is installed and enabled here", len(d.Units)), nil
		}
		return word.Pass("active and answering: %s", strings.Join(healthy, ", ")), nil
	})
}

// health says what is wrong with a watched unit, or "".
func health(u unit, st word.Unit) string {
	if st.LoadState != "loaded" {
		return "cannot load (" + st.LoadState + ")"
	}
	if st.ActiveState != "active" && st.ActiveState != "reloading" {
		s := fmt.Sprintf("is %s/%s", st.ActiveState, st.SubState)
		if st.Result != "" && st.Result != "success" {
			s += " (" + st.Result + ")"
		}
		return s
	}
	if u.Probe == "" {
		return ""
	}
	r, err := word.HTTP().Do(word.HTTPRequest{URL: u.Probe, Headers: map[string]string{"User-Agent": "lexicon-unit-health/1"}})
	if err != nil {
		return "does not answer " + u.Probe + ": " + word.Code(err)
	}
	if r.Status >= 500 {
		return fmt.Sprintf("answers %s with %d", u.Probe, r.Status)
	}
	return ""
}
