// Command motd is an example recipe's check, written as an outside author would: it imports only the
// word SDK, reads its file of the message of the day (pam_motd shows every file in /etc/motd.d), and fails when the declared line is missing, handing its
// repair word (./repair, motd_write) the params that put it back.
//
// Build and test it as the README says; `go test` runs both modules through the real Lexicon host
// under the recipe loop's rules (sdk/word/recipetest).
package main

import (
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

// Decl is the recipe's declaration: the agent fills it from the defaults of manifest.json's params
// schema, so a node's answer is whatever the signed manifest says.
type Decl struct {
	Path string `json:"path"`
	Line string `json:"line"`
}

// Repair is what motd_write takes; its manifest's params schema is the contract.
type Repair struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func main() {
	word.Check(func(d Decl) (word.Verdict, error) {
		data, whole, err := word.FS().Read(d.Path) // declared in manifest.json as fs.read
		if word.IsNotFound(err) {
			return word.Failing("%s does not exist", d.Path).WithRepair(Repair{Path: d.Path, Content: d.Line + "\n"}), nil
		}
		if err != nil {
			return word.Verdict{}, err // capability.unknown becomes an unknown verdict
		}
		if !whole {
			return word.Unknown("%s is larger than this check reads", d.Path), nil
		}
		text := string(data)
		for l := range strings.SplitSeq(text, "\n") {
			if l == d.Line {
				return word.Pass("%s carries the line", d.Path), nil
			}
		}
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return word.Failing("%s lacks the line", d.Path).WithRepair(Repair{Path: d.Path, Content: text + d.Line + "\n"}), nil
	})
}
