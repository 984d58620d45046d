package nodetext_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/plane/internal/nodetext"
)

func TestCapText(t *testing.T) {
	tests := []struct {
		name, in string
		max      int
		want     string
		cut      bool
	}{
		{"short", "disk full", 100, "disk full", false},
		{"NUL", "a\x00b", 100, "a\uFFFDb", false},
		{"bad UTF-8", "a\xffb", 100, "a\uFFFDb", false},
		{"escapes are kept", "\x1b[31mred", 100, "\x1b[31mred", false},
		{"cut", strings.Repeat("x", 50), 20, strings.Repeat("x", 20-len(nodetext.CutMark)) + nodetext.CutMark, true},
		{"cut between runes", strings.Repeat("é", 20), 20, strings.Repeat("é", 5) + nodetext.CutMark, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := nodetext.Cap(tc.in, tc.max)
			if got != tc.want || cut != tc.cut || len(got) > tc.max && tc.cut || !utf8.ValidString(got) {
				t.Fatalf("Cap = %q, %v; want %q, %v", got, cut, tc.want, tc.cut)
			}
		})
	}
}
