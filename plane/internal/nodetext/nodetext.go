// Package nodetext makes what a node sends storable and bounded before the plane keeps it: text is
// valid UTF-8 without NUL (neither database keeps NUL in text) and cut at a cap with a visible mark,
// and raw JSON is made valid UTF-8. Nothing else is changed: the text is shown as text, never
// interpreted, wherever it is shown.
package nodetext

import (
	"bytes"
	"slices"
	"strings"
)

// CutMark ends a text the plane shortened to its cap.
const CutMark = " …[cut]"

// Cap makes s storable and at most max bytes: invalid UTF-8 and NUL become U+FFFD, and text over max
// is cut at a character boundary and marked. It reports whether it cut.
func Cap(s string, max int) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= max {
		return s, false
	}
	s = strings.ToValidUTF8(s[:max-len(CutMark)], "")
	return s + CutMark, true
}

// JSON makes raw JSON from a node storable: invalid UTF-8 can only sit inside its strings (and
// json.Marshal keeps a RawMessage's bytes), so replacing it keeps the document valid.
func JSON(doc []byte) []byte {
	if len(doc) == 0 {
		return doc
	}
	return bytes.ToValidUTF8(doc, []byte("\uFFFD"))
}

// Capped names the fields intake cut, each once, for the log.
type Capped []string

// Add records that field was cut.
func (c *Capped) Add(field string) {
	if !slices.Contains(*c, field) {
		*c = append(*c, field)
	}
}

// Text is Cap, recording field when it cut.
func (c *Capped) Text(field, s string, max int) string {
	out, cut := Cap(s, max)
	if cut {
		c.Add(field)
	}
	return out
}
