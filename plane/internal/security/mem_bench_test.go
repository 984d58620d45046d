package security_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/security"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// rows is a store that answers PackageReportList from memory.
type rows []store.PackageReport

func (r rows) PackageReportList(context.Context, store.PackageReportListParams) ([]store.PackageReport, error) {
	return r, nil
}

func (rows) SecuritySettingsGet(context.Context) (store.SecuritySettings, error) {
	return store.SecuritySettings{}, nil
}

func (rows) SecuritySettingsSet(context.Context, store.SecuritySettingsSetParams) (store.SecuritySettings, error) {
	return store.SecuritySettings{}, nil
}

// summary is report(i) as the store keeps it for the view (migration 0027): the fields the view reads.
func summary(i int) json.RawMessage {
	var full map[string]json.RawMessage
	if err := json.Unmarshal(report(i), &full); err != nil {
		panic(err)
	}
	var os struct {
		PrettyName string `json:"pretty_name"`
	}
	var boot struct {
		Owed bool `json:"owed"`
	}
	_ = json.Unmarshal(full["os"], &os)
	_ = json.Unmarshal(full["reboot"], &boot)
	out, _ := json.Marshal(map[string]any{"known": full["known"], "unknown": full["unknown"], "security_upgrades": full["security_upgrades"],
		"half_configured": full["half_configured"], "stale_services": full["stale_services"], "reboot": map[string]any{"owed": boot.Owed},
		"os": map[string]any{"pretty_name": os.PrettyName}})
	return out
}

// BenchmarkJudge10000 measures the view's own work for 10,000 nodes (decoding each report, the
// classifier, the sort) without the database: what the plane adds to the query's time, from whole
// outputs (reports taken in before the store kept summaries) and from the summaries the store reads now.
func BenchmarkJudge10000(b *testing.B) {
	for _, kind := range []string{"output", "summary"} {
		b.Run(kind, func(b *testing.B) {
			judge10000(b, map[string]func(int) json.RawMessage{"output": report, "summary": summary}[kind])
		})
	}
}

func judge10000(b *testing.B, out func(int) json.RawMessage) {
	now := time.Now().UTC()
	var rs rows
	for i := range 10000 {
		rs = append(rs, store.PackageReport{NodeID: fmt.Sprint(i), NodeName: fmt.Sprintf("node-%05d", i), HasWord: true, JobID: "j", FinishedAt: now, Output: out(i)})
	}
	room := security.NewRoom(security.RoomConfig{Store: rs, Now: func() time.Time { return now }})
	for b.Loop() {
		if _, err := room.View(b.Context(), viewer); err != nil {
			b.Fatal(err)
		}
	}
}
