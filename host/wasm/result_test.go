package wasm

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// TestWordFailureReservedAreas: a word reporting a code of an area the codes table reserves fails as
// word.failed with what it said as the reason; its own areas and capability.* pass through.
func TestWordFailureReservedAreas(t *testing.T) {
	cases := []struct {
		reported, code string
	}{
		{"restart_unit.failed", "restart_unit.failed"},
		{errcode.CapabilityDenied, errcode.CapabilityDenied},
		{errcode.RecipeNoVerdict, errcode.RecipeNoVerdict},
		{errcode.WordFailed, errcode.WordFailed},
		{errcode.WordDeadlineExceeded, errcode.WordFailed},
		{errcode.StoreUnavailable, errcode.WordFailed},
		{errcode.PlaneUnreachable, errcode.WordFailed},
		{errcode.AgentBusy, errcode.WordFailed},
		{errcode.DriverCrashed, errcode.WordFailed},
		{errcode.InternalError, errcode.WordFailed},
		{errcode.JobLost, errcode.WordFailed},
		{"Not A Code", errcode.WordFailed},
	}
	for _, c := range cases {
		t.Run(c.reported, func(t *testing.T) {
			e, ok := wordFailure([]byte(`{"error":{"code":"` + c.reported + `","message":"m"}}`))
			if !ok || e.Code != c.code {
				t.Fatalf("wordFailure(%q) = %v, %v; want %s", c.reported, e, ok, c.code)
			}
			if c.code == errcode.WordFailed && c.reported != errcode.WordFailed && e.Details["reason"] != c.reported {
				t.Errorf("reason = %v, want %q", e.Details["reason"], c.reported)
			}
		})
	}
}

// validCode is a loop instead of a package-level regexp (compiled at every worker start); it must
// accept exactly what the regexp it replaced accepted.
func TestValidCodeMatchesTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}\.[a-z][a-z0-9_]{0,60}$`)
	cases := []string{"", ".", "a.b", "a.", ".b", "a..b", "a.b.c", "9a.b", "a.9b", "word.failed", "a.b\n",
		strings.Repeat("a", 41) + ".b", strings.Repeat("a", 42) + ".b", "a." + strings.Repeat("b", 61), "a." + strings.Repeat("b", 62)}
	common, rare := "ab_9.", []string{"A", "-", " ", "\n", "é", "\xff", "\x00"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := rng.IntN(10)
		if rng.IntN(4) == 0 {
			n = 38 + rng.IntN(70)
		}
		var b strings.Builder
		for range n {
			switch {
			case rng.IntN(32) == 0:
				b.WriteString(rare[rng.IntN(len(rare))])
			case rng.IntN(16) == 0:
				b.WriteByte('.')
			default:
				b.WriteByte(common[rng.IntN(4)])
			}
		}
		cases = append(cases, b.String())
	}
	matched := 0
	for _, s := range cases {
		got, want := validCode(s), re.MatchString(s)
		if got != want {
			t.Fatalf("validCode(%q) = %v, the regexp says %v", s, got, want)
		}
		if want {
			matched++
		}
	}
	if matched < 100 {
		t.Fatalf("only %d cases match: the comparison tests rejections alone", matched)
	}
}
