package manifest

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/cas"
)

// The shape checks are loops instead of package-level regexps (compiled at every start of every
// binary importing this package); each must accept exactly what the regexp it replaced accepted.
func TestShapesMatchTheRegexps(t *testing.T) {
	for _, c := range []struct {
		re       string
		got      func(string) bool
		alphabet string // the four characters mostly used, then others
		near     int    // a length bound to test around
	}{
		{`^[a-z][a-z0-9_]{0,62}$`, ValidName, "z0_A.-/ ", 63},
		{`^[a-z0-9]+/[a-z0-9]+$`, validPlatform, "a0/A_-. ", 5},
		{`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`, validFile, "aZ.9_-/ ", 128},
		{`^[0-9a-f]{64}$`, cas.ValidDigest, "0fa9FgA-x. ", 64},
	} {
		re := regexp.MustCompile(c.re)
		for _, s := range shapeCases(c.alphabet, c.near) {
			if got, want := c.got(s), re.MatchString(s); got != want {
				t.Fatalf("%s: %q gives %v, the regexp %v", c.re, s, got, want)
			}
		}
	}
}

// shapeCases are short strings and strings around near, mostly of alphabet's first four characters,
// with its others, non-ASCII and control characters mixed in rarely enough that long strings of the
// first four alone are common.
func shapeCases(alphabet string, near int) []string {
	more := []string{"é", "\n", "\x00", "\xff", "ｚ"}
	for _, r := range alphabet {
		more = append(more, string(r))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []string{"", "\n", "a\n", "\na"}
	for range 20000 {
		n := rng.IntN(8)
		if rng.IntN(4) == 0 {
			n = max(0, near-3+rng.IntN(6))
		}
		var b strings.Builder
		for range n {
			if rng.IntN(32) == 0 {
				b.WriteString(more[rng.IntN(len(more))])
			} else {
				b.WriteByte(alphabet[rng.IntN(4)])
			}
		}
		cases = append(cases, b.String())
	}
	return cases
}

func TestShapeCasesHoldMatches(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{64}$`)
	n := 0
	for _, s := range shapeCases("0fa9FgA-x. ", 64) {
		if re.MatchString(s) {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no case of 64 hex digits: the comparison above would test rejections only")
	}
}
