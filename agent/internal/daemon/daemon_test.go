package daemon

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/registry/channel"
)

type reporter struct {
	cases     []channel.CaseReport
	delivered [][]channel.CaseReport
}

func (r *reporter) Report() ([]channel.RecipeReport, []channel.CaseReport) {
	out := append([]channel.CaseReport(nil), r.cases...)
	return []channel.RecipeReport{{Name: "unit_health", State: channel.RecipeActive}}, out
}

func (r *reporter) Delivered(c []channel.CaseReport) { r.delivered = append(r.delivered, c) }

var _ Reporter = (*reporter)(nil)

// TestCaseBodyWaitsForRoom: a case body larger than the claim size the plane accepts rides only after
// a claim has announced the room it needs; the summary rides at once.
func TestCaseBodyWaitsForRoom(t *testing.T) {
	v, err := vocab.Open(filepath.Join(t.TempDir(), "trust"), filepath.Join(t.TempDir(), "modules"), nil)
	if err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`{"facts": "` + strings.Repeat("x", 100<<10) + `"}`)
	rep := &reporter{cases: []channel.CaseReport{{ID: 3, Recipe: "unit_health", State: channel.CaseOpen, Summary: "s",
		Body: &channel.CaseBody{Mode: "repair", HostReport: big}}}}
	d := &Daemon{Vocab: v, Version: "test", Recipes: rep}

	first := d.claim()
	if len(first.Cases) != 1 || first.Cases[0].Body != nil || first.ClaimSize < 200<<10 {
		t.Fatalf("first claim: %d cases, body %v, claim_size %d", len(first.Cases), first.Cases[0].Body != nil, first.ClaimSize)
	}
	if rep.cases[0].Body == nil {
		t.Fatal("the claim dropped the reporter's own body")
	}
	if b, _ := json.Marshal(first); len(b) > channel.DefaultBodyCap {
		t.Fatalf("first claim of %d bytes", len(b))
	}
	d.accepted = max(first.ClaimSize, channel.DefaultBodyCap) // what Run records when the claim succeeds
	second := d.claim()
	if second.Cases[0].Body == nil {
		t.Fatal("the body does not ride once there is room")
	}
	if b, _ := json.Marshal(second); len(b) > d.accepted {
		t.Fatalf("second claim of %d bytes over the %d accepted", len(b), d.accepted)
	}
}
