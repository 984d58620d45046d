// Command motd_write is the repair word of the example recipe motd: it writes the message of the day
// its check computed. Its manifest lets it write that one file and nothing else.
package main

import "github.com/lexicon-fleet/lexicon/sdk/word"

// Params come only from this node's own failing check (the recipe is node_derived).
type Params struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Output says what was written.
type Output struct {
	Bytes int64 `json:"bytes"`
}

func main() {
	word.Run(func(p Params) (Output, error) {
		w, err := word.FS().Write(p.Path, []byte(p.Content), 0) // declared as fs.write; keeps the file's mode
		if err != nil {
			return Output{}, err
		}
		word.Log("wrote %d bytes to %s", w.Size, p.Path)
		return Output{Bytes: w.Size}, nil
	})
}
