// Command unit_journal is the word that shows the last lines of an allow-listed unit's journal.
package main

import (
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	Unit  string `json:"unit"`
	Lines int    `json:"lines"`
}

type line struct {
	Time     time.Time `json:"time"`
	Priority int       `json:"priority"`
	Message  string    `json:"message"`
}

type output struct {
	Unit      string `json:"unit"`
	Known     bool   `json:"known"`
	Reason    string `json:"reason,omitempty"`
	Lines     []line `json:"lines"`
	Truncated bool   `json:"truncated"`
}

func main() {
	word.Run(func(p params) (output, error) {
		n := p.Lines
		if n == 0 {
			n = 50
		}
		j, err := word.ReadJournal(p.Unit, n)
		if word.IsUnknown(err) {
			return output{Unit: p.Unit, Reason: err.Error(), Lines: []line{}}, nil
		}
		if err != nil {
			return output{}, err
		}
		out := output{Unit: p.Unit, Known: true, Lines: []line{}, Truncated: j.Truncated}
		for _, e := range j.Entries {
			out.Lines = append(out.Lines, line{Time: e.Time, Priority: e.Priority, Message: e.Message})
		}
		return out, nil
	})
}
