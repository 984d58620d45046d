// Command file_head is the word that shows the first lines of an allow-listed configuration file, with
// secrets redacted by the shape of configuration: a line whose key names a credential keeps its key
// only, a URL keeps everything but its password, and a PEM private key block is dropped whole.
package main

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	Path  string `json:"path"`
	Lines int    `json:"lines"`
}

type output struct {
	Path      string   `json:"path"`
	Lines     []string `json:"lines"`
	Truncated bool     `json:"truncated"`
	Redacted  int      `json:"redacted"`
	Binary    bool     `json:"binary"`
}

func main() {
	word.Run(func(p params) (output, error) {
		n := p.Lines
		if n == 0 {
			n = 20
		}
		data, whole, err := word.FS().Read(p.Path)
		if err != nil {
			return output{}, err
		}
		out := output{Path: p.Path, Lines: []string{}}
		if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(trimPartialRune(data)) {
			out.Binary = true
			return out, nil
		}
		text := string(data)
		if !whole {
			// The read stopped inside the file: drop the last, possibly cut, line.
			if i := strings.LastIndexByte(text, '\n'); i >= 0 {
				text = text[:i+1]
			}
		}
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > n || !whole {
			out.Truncated = true
		}
		if len(lines) > n {
			lines = lines[:n]
		}
		r := redactor{}
		for _, l := range lines {
			line, changed := r.line(strings.TrimRight(l, "\r\n"))
			if changed {
				out.Redacted++
			}
			out.Lines = append(out.Lines, line)
		}
		return out, nil
	})
}

// trimPartialRune drops an incomplete UTF-8 sequence a capped read may end in.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < 3 && len(b) > 0; i++ {
		if utf8.Valid(b) {
			return b
		}
		b = b[:len(b)-1]
	}
	return b
}
