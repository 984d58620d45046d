package security_test

import (
	"context"
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

// BenchmarkJudge10000 measures the view's own work for 10,000 nodes (decoding each report, the
// classifier, the sort) without the database: what the plane adds to the query's time.
func BenchmarkJudge10000(b *testing.B) {
	now := time.Now().UTC()
	var rs rows
	for i := range 10000 {
		rs = append(rs, store.PackageReport{NodeID: fmt.Sprint(i), NodeName: fmt.Sprintf("node-%05d", i), HasWord: true, JobID: "j", FinishedAt: now, Output: report(i)})
	}
	room := security.NewRoom(security.RoomConfig{Store: rs, Now: func() time.Time { return now }})
	for b.Loop() {
		if _, err := room.View(b.Context(), viewer); err != nil {
			b.Fatal(err)
		}
	}
}
