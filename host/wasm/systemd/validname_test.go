package systemd_test

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
)

// ValidName is a loop instead of a package-level regexp (compiled at every start of the binary); it
// must accept exactly what the regexp it replaced accepted.
func TestValidNameMatchesTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9:_.@\\-]{1,255}$`)
	want := func(s string) bool { return re.MatchString(s) && !strings.HasPrefix(s, "-") }
	alphabet := []string{"a", "Z", "0", ":", "_", ".", "@", "\\", "-", "/", " ", "\n", "é", "\x00", "\xff", "$"}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []string{"", "-", "nginx.service", "-nginx", "getty@tty1.service", strings.Repeat("a", 255),
		strings.Repeat("a", 256), "a\n", "\na", "a b"}
	for range 20000 {
		n := rng.IntN(8)
		if rng.IntN(10) == 0 {
			n = 250 + rng.IntN(10)
		}
		var b strings.Builder
		for range n {
			if rng.IntN(4) == 0 {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			} else {
				b.WriteString(alphabet[rng.IntN(4)])
			}
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		if got := systemd.ValidName(s); got != want(s) {
			t.Fatalf("ValidName(%q) = %v, the regexp says %v", s, got, want(s))
		}
	}
}
