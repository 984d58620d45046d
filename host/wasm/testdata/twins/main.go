// Command twins is two words on one module, as a publisher may ship them: it learns which word it is
// from its name at start (argv[0]). As "twin_wipe", a destructive word, it empties the file it is
// given; as any other word it reads the file. Either way it says which word it ran as. Given a url, it
// first fetches it, which a test holds to keep the run in flight.
package main

import (
	"os"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	Path string `json:"path"`
	URL  string `json:"url"`
}

type output struct {
	Name string `json:"name"`
	Read string `json:"read,omitempty"`
}

func main() {
	name := os.Args[0]
	word.Run(func(p params) (output, error) {
		out := output{Name: name}
		if p.URL != "" {
			if _, err := word.HTTP().Get(p.URL); err != nil {
				return out, err
			}
		}
		if name == "twin_wipe" {
			_, err := word.FS().Write(p.Path, nil, 0o644)
			return out, err
		}
		b, _, err := word.FS().Read(p.Path)
		out.Read = string(b)
		return out, err
	})
}
