package nodes_test

import (
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/nodes"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestCheckLabels: a label outside the grammar is node.label_invalid naming the key, never the store's
// store.param_invalid.
func TestCheckLabels(t *testing.T) {
	many := map[string]string{}
	for i := range store.MaxLabels + 1 {
		many["k"+strings.Repeat("x", i)] = "v"
	}
	for name, c := range map[string]struct {
		set    map[string]string
		remove []string
		label  string
	}{
		"upper key":    {set: map[string]string{"Role": "web"}, label: "Role"},
		"empty value":  {set: map[string]string{"role": ""}, label: "role"},
		"comma value":  {set: map[string]string{"role": "a,b"}, label: "role"},
		"remove upper": {remove: []string{"Bad Key"}, label: "Bad Key"},
		"too many":     {set: many, label: ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := nodes.CheckLabels(c.set, c.remove)
			testkit.WantCode(t, err, errcode.NodeLabelInvalid)
			if got, _ := errcode.From(err, "").Details[errcode.DetailLabel].(string); got != c.label {
				t.Errorf("details.label %q, want %q", got, c.label)
			}
		})
	}
	if err := nodes.CheckLabels(map[string]string{"role": "web", "zone": "a-1"}, []string{"old"}); err != nil {
		t.Fatal(err)
	}
}
