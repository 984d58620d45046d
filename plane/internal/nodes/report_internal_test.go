package nodes

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

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
