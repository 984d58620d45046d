// Package security is the fleet security view: every active node's newest packages_report, read in
// one query and judged red, amber, grey or green with its reasons by Classify, a pure function.
package security

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
)

// Word is the word whose reports the view reads.
const Word = "packages_report"

// Store is what the room reads.
type Store interface {
	PackageReportList(ctx context.Context, p store.PackageReportListParams) ([]store.PackageReport, error)
}

// RoomConfig sets up the room.
type RoomConfig struct {
	Store Store
	// Config is what counts as critical and how long things may wait; zero fields take DefaultConfig's.
	Config Config
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Room answers the fleet security view.
type Room struct{ c RoomConfig }

// NewRoom makes the room.
func NewRoom(c RoomConfig) *Room {
	if c.Now == nil {
		c.Now = time.Now
	}
	d := DefaultConfig()
	if c.Config.Critical == nil {
		c.Config.Critical = d.Critical
	}
	if c.Config.CriticalUnits == nil {
		c.Config.CriticalUnits = d.CriticalUnits
	}
	for _, x := range []struct {
		v *time.Duration
		d time.Duration
	}{{&c.Config.RebootAfter, d.RebootAfter}, {&c.Config.SilentAfter, d.SilentAfter}, {&c.Config.FixAge, d.FixAge}} {
		if *x.v <= 0 {
			*x.v = x.d
		}
	}
	return &Room{c: c}
}

// Thresholds is what the store's package detectors judge by: the same critical list and fix age as
// the view, so the page and the incidents agree.
func (c Config) Thresholds() store.PackageThresholds {
	return store.PackageThresholds{Critical: c.Critical, FixAge: c.FixAge}
}

// Judged is a node's row with its verdict, for the view and the incident detectors.
type Judged struct {
	Row     api.SecurityRow
	Verdict Verdict
}

// Judge reads every active node's reports in one query and classifies each.
func (r *Room) Judge(ctx context.Context) ([]Judged, time.Time, error) {
	now := r.c.Now().UTC()
	reports, err := r.c.Store.PackageReportList(ctx, store.PackageReportListParams{Word: Word,
		RebootCutoff: now.Add(-r.c.Config.RebootAfter), FixCutoff: now.Add(-r.c.Config.FixAge)})
	if err != nil {
		return nil, now, err
	}
	out := make([]Judged, 0, len(reports))
	for _, p := range reports {
		in := Input{HasWord: p.HasWord, ReportedAt: p.FinishedAt, OwedBefore: p.OwedBefore, Now: now}
		if p.JobID != "" {
			var rep Report
			if json.Unmarshal(p.Output, &rep) == nil {
				in.Report = &rep
			}
			if len(p.FixesBefore) > 0 {
				_ = json.Unmarshal(p.FixesBefore, &in.FixesBefore) // not a list: nothing aged
			}
		}
		v := Classify(r.c.Config, in)
		row := api.SecurityRow{NodeID: p.NodeID, Node: p.NodeName, Level: v.Level, JobID: p.JobID, ReportedAt: p.FinishedAt,
			Reasons: make([]api.SecurityReason, 0, len(v.Reasons))}
		if in.Report != nil {
			row.OS = in.Report.OS.PrettyName
		}
		for _, rs := range v.Reasons {
			row.Reasons = append(row.Reasons, api.SecurityReason(rs))
		}
		out = append(out, Judged{Row: row, Verdict: v})
	}
	return out, now, nil
}

// View answers the fleet security view: red rows first, then amber, grey and green, each by name.
func (r *Room) View(ctx context.Context, who api.Token) (api.SecurityView, error) {
	judged, now, err := r.Judge(ctx)
	if err != nil {
		return api.SecurityView{}, err
	}
	v := api.SecurityView{Rows: make([]api.SecurityRow, 0, len(judged)), At: now, Critical: r.c.Config.Critical,
		Counts: map[string]int{api.SecurityRed: 0, api.SecurityAmber: 0, api.SecurityGrey: 0, api.SecurityGreen: 0}}
	for _, j := range judged {
		v.Rows = append(v.Rows, j.Row)
		v.Counts[j.Row.Level]++
	}
	slices.SortStableFunc(v.Rows, func(a, b api.SecurityRow) int {
		if d := rank(a.Level) - rank(b.Level); d != 0 {
			return d
		}
		return strings.Compare(a.Node, b.Node)
	})
	return v, nil
}
