// Command scripted is a test recipe whose check answers whatever the file it declares says, so the
// recipe loop's tests can make a check answer anything a real one could, through the real host.
package main

import (
	"encoding/json"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type decl struct {
	File string `json:"file"`
	// Unit is declared only to prove the loop never hands a declaration to a node_derived repair.
	Unit string `json:"unit"`
}

type script struct {
	Verdict string          `json:"verdict"`
	Detail  string          `json:"detail"`
	Repair  json.RawMessage `json:"repair"`
}

func main() {
	word.Check(func(d decl) (word.Verdict, error) {
		data, _, err := word.FS().Read(d.File)
		if word.IsNotFound(err) {
			return word.Unknown("no script at %s", d.File), nil
		}
		if err != nil {
			return word.Verdict{}, err
		}
		var s script
		if err := json.Unmarshal(data, &s); err != nil {
			return word.Verdict{}, word.Fail("scripted.bad_script", "%v", err)
		}
		v := word.Verdict{Verdict: s.Verdict, Detail: s.Detail}
		if len(s.Repair) > 0 {
			v.Repair = s.Repair
		}
		return v, nil
	})
}
