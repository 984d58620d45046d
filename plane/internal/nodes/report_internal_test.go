package nodes

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lexicon-fleet/lexicon/plane/internal/nodetext"
	"github.com/lexicon-fleet/lexicon/registry/channel"
)

func TestCapRecipes(t *testing.T) {
	in := make([]channel.RecipeReport, channel.MaxRecipes+3)
	for i := range in {
		in[i] = channel.RecipeReport{Name: "r", Detail: strings.Repeat("d", channel.MaxCaseText+1)}
	}
	out, cut := capRecipes(in)
	if len(out) != channel.MaxRecipes || len(out[0].Detail) > channel.MaxCaseText || len(cut) == 0 || cut[0] != "recipes" {
		t.Fatalf("capped to %d, cut %v", len(out), cut)
	}
}

// FuzzCapRecipes feeds claim bodies through the plane's recipe intake: whatever a node sends, the
// recipe report comes out storable (valid UTF-8, no NUL) and within its caps.
func FuzzCapRecipes(f *testing.F) {
	f.Add([]byte(`{"recipes":[{"name":"unit_health","state":"ok","detail":"\u0000\u001b[2J"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req channel.ClaimRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		list, _ := capRecipes(req.Recipes)
		for _, r := range list {
			if !utf8.ValidString(r.Detail) || strings.Contains(r.Detail, "\x00") || len(r.Detail) > channel.MaxCaseText {
				t.Fatalf("recipe detail %q", r.Detail)
			}
		}
	})
}

// TestFactsFromClaim: a node's facts are cut to their caps and made valid text, never refused; a claim
// without facts records none.
func TestFactsFromClaim(t *testing.T) {
	if got := factsFromClaim(nil); !got.CollectedAt.IsZero() {
		t.Fatalf("no facts: %+v", got)
	}
	addrs := make([]string, channel.MaxFactAddresses+3)
	for i := range addrs {
		addrs[i] = "192.0.2.1"
	}
	addrs[0] = ""
	in := &channel.HostFacts{CollectedAt: time.Unix(1, 0), OS: strings.Repeat("o", 1000), Kernel: "6\x00\xff", CPUs: -1,
		DiskBytes: -5, Addresses: addrs}
	got := factsFromClaim(in)
	if len(got.OS) > channel.MaxFactText || !strings.HasSuffix(got.OS, nodetext.CutMark) {
		t.Errorf("os of %d bytes", len(got.OS))
	}
	if !utf8.ValidString(got.Kernel) || strings.Contains(got.Kernel, "\x00") {
		t.Errorf("kernel %q", got.Kernel)
	}
	if got.CPUs != 0 || got.DiskBytes != 0 || len(got.Addresses) != channel.MaxFactAddresses || got.Addresses[0] == "" {
		t.Errorf("counts: %+v", got)
	}
	if in.OS == got.OS {
		t.Error("the claim's own facts were changed")
	}
}

// FuzzReachFromClaim feeds claim bodies through the plane's reach intake: whatever a node sends, each
// word's reach comes out storable (valid UTF-8 without NUL, every list and text within its cap, every
// word named).
func FuzzReachFromClaim(f *testing.F) {
	f.Add([]byte(`{"reach":[{"word":"converge","digest":"d","caps":[{"cap":"fs.install","roots":["/etc/nginx","\u0000\u001b[2J"],"narrowed":true,"denied":"\xff"}]},{"word":""}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req channel.ClaimRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		ok := func(s string) bool {
			return utf8.ValidString(s) && !strings.Contains(s, "\x00") && len(s) <= channel.MaxReachText
		}
		out := reachFromClaim(req.Reach)
		if len(out) > channel.MaxReachWords {
			t.Fatalf("%d words", len(out))
		}
		for _, w := range out {
			if w.Word == "" || !ok(w.Word) || !ok(w.Digest) || !ok(w.Refused) || len(w.Caps) > channel.MaxReachCaps {
				t.Fatalf("word %+v", w)
			}
			for _, c := range w.Caps {
				if !ok(c.Cap) || !ok(c.Denied) || !ok(c.Note) {
					t.Fatalf("capability %+v", c)
				}
				for _, l := range c.Lists() {
					if len(*l.List) > channel.MaxReachList {
						t.Fatalf("%s: %d entries", l.Name, len(*l.List))
					}
					for _, e := range *l.List {
						if !ok(e) {
							t.Fatalf("%s entry %q", l.Name, e)
						}
					}
				}
			}
		}
	})
}

func TestReachFromClaimCuts(t *testing.T) {
	in := make([]channel.WordReach, channel.MaxReachWords+2)
	for i := range in {
		in[i] = channel.WordReach{Word: "w", Caps: []channel.CapReach{{Cap: "fs.read", Roots: make([]string, channel.MaxReachList+5), Denied: strings.Repeat("x", channel.MaxReachText+9)}}}
	}
	in[0].Word = ""
	out := reachFromClaim(in)
	if len(out) != channel.MaxReachWords || len(out[0].Caps[0].Roots) != channel.MaxReachList || len(out[0].Caps[0].Denied) > channel.MaxReachText {
		t.Fatalf("cut to %d words, %d roots, denied of %d bytes", len(out), len(out[0].Caps[0].Roots), len(out[0].Caps[0].Denied))
	}
}
