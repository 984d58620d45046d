package drift

import (
	"errors"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

func TestSummary(t *testing.T) {
	var fs []Finding
	for i := range 40 {
		id := "file:/etc/app/" + strings.Repeat("x", 20) + string(rune('a'+i%26))
		fs = append(fs, Finding{Item: footprint.Item{ID: id, Kind: footprint.KindFile}, Diffs: []string{"content", "mode 0600, not 0644"}})
	}
	fs = append(fs, Finding{Item: footprint.Item{ID: "unit:x.service"}, Err: errors.New("no systemd")})
	s := Summary(fs, 300)
	if len(s) > 300 || !strings.HasPrefix(s, fs[0].Item.ID+" (content; mode 0600, not 0644), ") || !strings.HasSuffix(s, " more") {
		t.Fatalf("%d: %s", len(s), s)
	}
	if s := Summary(fs[:1], 300); s != fs[0].Item.ID+" (content; mode 0600, not 0644)" {
		t.Fatal(s)
	}
	owed := Owed([]Finding{{Item: footprint.Item{ID: "unit:web.service", Kind: footprint.KindUnit, Key: "web.service"}}},
		[]capv1.Pending{{Unit: "web.service", Action: "restart"}, {Action: "daemon-reload"}})
	if len(owed[0].Diffs) != 1 || owed[0].Diffs[0] != "owes a restart" {
		t.Fatal(owed[0].Diffs)
	}
}
