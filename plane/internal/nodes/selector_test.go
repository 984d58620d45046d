package nodes_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestSelectorFacts: a selector names labels and host facts together; a fact it does not know, a
// fact without a value or names mixed with facts are node.filter_invalid.
func TestSelectorFacts(t *testing.T) {
	deb := store.Node{Name: "web-1", Labels: map[string]string{"role": "web"},
		Facts: store.NodeFacts{CollectedAt: time.Unix(1, 0), OS: "debian-12", Addresses: []string{"192.0.2.1"}, CPUs: 4}}
	ubu := store.Node{Name: "web-2", Labels: map[string]string{"role": "web"}, Facts: store.NodeFacts{OS: "ubuntu-24.04"}}
	for sel, want := range map[string][2]bool{
		"fact.os=debian-12":                  {true, false},
		"role=web,fact.os=ubuntu-24.04":      {false, true},
		"fact.address=192.0.2.1,fact.cpus=4": {true, false},
		"role=web":                           {true, true},
		"all":                                {true, true},
	} {
		s, err := nodes.ParseSelector("where", sel)
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		if got := [2]bool{s.Match(deb), s.Match(ubu)}; got != want {
			t.Errorf("%s matches %v, want %v", sel, got, want)
		}
	}
	for _, bad := range []string{"fact.nosuch=1", "fact.os=", "web-1,fact.os=debian-12", "fact.os=a,fact.os=b", "role=web,,", "fact.os=" + strings.Repeat("x", 300)} {
		_, err := nodes.ParseSelector("where", bad)
		testkit.WantCode(t, err, errcode.NodeFilterInvalid)
	}
}

// FuzzParseSelector: any text parses to a selector or is node.filter_invalid, never a panic; a parsed
// one never mixes names with labels or facts.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"", "all", "web-1,web-2", "role=web,zone=a", "fact.os=debian-12", "fact.address=::1", "fact.=x", "fact.os==", "a=b=c", ",", "fact.cpus=4,role=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := nodes.ParseSelector("where", s)
		if err != nil {
			if errcode.Code(err) != errcode.NodeFilterInvalid {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if len(sel.Names) > 0 && (len(sel.Labels) > 0 || len(sel.Facts) > 0) {
			t.Fatalf("%q mixes names with labels or facts: %+v", s, sel)
		}
		sel.Match(store.Node{})
		if _, err := nodes.ParseSearch(s); err != nil && errcode.Code(err) != errcode.NodeFilterInvalid {
			t.Fatalf("search %q: %v", s, err)
		}
	})
}
