// Command scripted is recipetest's own check: it answers the verdict its declaration names, with the
// repair params its declaration gives.
package main

import (
	"encoding/json"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type Decl struct {
	Verdict string          `json:"verdict"`
	Repair  json.RawMessage `json:"repair,omitempty"`
}

func main() {
	word.Check(func(d Decl) (word.Verdict, error) {
		switch d.Verdict {
		case word.VerdictPass:
			return word.Pass("scripted pass"), nil
		case word.VerdictUnknown:
			return word.Unknown("scripted unknown"), nil
		}
		v := word.Failing("scripted fail")
		if len(d.Repair) > 0 {
			v = v.WithRepair(d.Repair)
		}
		return v, nil
	})
}
