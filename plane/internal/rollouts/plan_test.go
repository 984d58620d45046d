package rollouts_test

import (
	"fmt"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/rollouts"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func fleet(n int, labels func(i int) map[string]string) []store.Node {
	var out []store.Node
	for i := range n {
		out = append(out, store.Node{ID: fmt.Sprintf("node_%02d", i), Name: fmt.Sprintf("web-%02d", i), State: store.NodeActive, Labels: labels(i)})
	}
	return out
}

func stagesOf(steps []store.RolloutStepNew) []int {
	out := make([]int, len(steps))
	for i, s := range steps {
		out[i] = s.Stage
	}
	return out
}

func TestPlanCanaryAndPercentages(t *testing.T) {
	nodes := fleet(20, func(i int) map[string]string { return map[string]string{"role": "web"} })
	steps, desc, err := rollouts.Plan(nodes, "role=web", rollouts.Staging{Canary: 1, Percentages: []string{"10%", "50%", "100%"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}
	if fmt.Sprint(stagesOf(steps)) != fmt.Sprint(want) || len(desc) != 4 {
		t.Fatalf("stages %v (%v), want %v", stagesOf(steps), desc, want)
	}
}

func TestPlanExplicitStages(t *testing.T) {
	nodes := fleet(4, func(i int) map[string]string { return map[string]string{"zone": []string{"a", "b"}[i%2]} })
	steps, _, err := rollouts.Plan(nodes, "", rollouts.Staging{Stages: []string{"web-03", "zone=a", "zone=b"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(stagesOf(steps)); got != "[1 2 1 0]" {
		t.Fatalf("stages %s", got)
	}
}

func TestPlanRefusals(t *testing.T) {
	nodes := fleet(3, func(i int) map[string]string { return map[string]string{"role": "web"} })
	for _, c := range []struct {
		selector string
		st       rollouts.Staging
		code     string
	}{
		{"tier=web", rollouts.Staging{}, errcode.RolloutSelectorUnknownKey},
		{"role=db", rollouts.Staging{}, errcode.RolloutEmptySelection},
		{"web-09", rollouts.Staging{}, errcode.RolloutEmptySelection},
		{"web-00,role=web", rollouts.Staging{}, errcode.RolloutSelectorInvalid},
		{"role=web,", rollouts.Staging{}, errcode.RolloutSelectorInvalid},
		{"", rollouts.Staging{Stages: []string{"web-00"}}, errcode.RolloutStagesIncomplete},
		{"", rollouts.Staging{Canary: 1, Percentages: []string{"50%"}}, errcode.RolloutStagesIncomplete},
		{"", rollouts.Staging{Percentages: []string{"50%", "20%"}}, errcode.RolloutSelectorInvalid},
		{"", rollouts.Staging{Stages: []string{"web-00"}, Canary: 1}, errcode.RolloutSelectorInvalid},
	} {
		_, _, err := rollouts.Plan(nodes, c.selector, c.st)
		testkit.WantCode(t, err, c.code)
	}
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"", "all", "role=web,zone=a", "web-1,web-2", "a=b=c", ",", "role=web,web-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := rollouts.ParseSelector("selector", s)
		if err != nil {
			if !errcode.Has(err, errcode.RolloutSelectorInvalid) {
				t.Fatalf("%q: uncoded refusal %v", s, err)
			}
			return
		}
		if len(sel.Names) > 0 && len(sel.Labels) > 0 {
			t.Fatalf("%q mixes names and labels", s)
		}
	})
}

// TestPlanSelectsByFacts: a rollout's selector and stages may name host facts (the nodes room's
// grammar); a bad fact term is still rollout.selector_invalid to a rollout's caller.
func TestPlanSelectsByFacts(t *testing.T) {
	nodes := fleet(6, func(i int) map[string]string { return map[string]string{"role": "web"} })
	for i := range nodes {
		nodes[i].Facts.OS = []string{"debian-12", "debian-13"}[i%2]
	}
	steps, _, err := rollouts.Plan(nodes, "role=web,fact.os=debian-12", rollouts.Staging{})
	if err != nil || len(steps) != 3 {
		t.Fatalf("%d steps, %v", len(steps), err)
	}
	steps, _, err = rollouts.Plan(nodes, "role=web", rollouts.Staging{Stages: []string{"fact.os=debian-13", "role=web"}})
	if err != nil || fmt.Sprint(stagesOf(steps)) != "[1 0 1 0 1 0]" {
		t.Fatalf("stages %v, %v", stagesOf(steps), err)
	}
	_, _, err = rollouts.Plan(nodes, "fact.nosuch=1", rollouts.Staging{})
	testkit.WantCode(t, err, errcode.RolloutSelectorInvalid)
}
