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
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Word is the word whose reports the view reads.
const Word = "packages_report"

// Store is what the room reads.
type Store interface {
	PackageReportList(ctx context.Context, p store.PackageReportListParams) ([]store.PackageReport, error)
	SecuritySettingsGet(ctx context.Context) (store.SecuritySettings, error)
	SecuritySettingsSet(ctx context.Context, p store.SecuritySettingsSetParams) (store.SecuritySettings, error)
}

// RoomConfig sets up the room.
type RoomConfig struct {
	Store Store
	// Config is what counts as critical and how long things may wait; zero fields take DefaultConfig's.
	// Its Critical is the plane's own list: a list an admin set at run time (the store's
	// SecuritySettings) stands in for it until reset.
	Config Config
	// Roles, when set, says what each node serves by its roles (the roles room): a served package's
	// fix and a served unit's replaced code are critical on that node. Nil: nothing is served.
	Roles Roles
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Roles is what the room asks of the roles room: ServedBy reads the roles and their assignments and
// answers what a node serves, judged on the node's ID, name, labels and facts (what a selector
// matches), or nil when no role is assigned, so that a plane without roles reads no node's labels.
// The nodes come from the view's own query (PackageReportListParams.Selectable): asking the roles
// room to read the fleet again cost more than the rest of the view.
type Roles interface {
	ServedBy(ctx context.Context) (Serving, error)
}

// Serving answers what one node serves; one caller at a time.
type Serving func(n store.Node) Served

// serving asks Roles, if any.
func (r *Room) serving(ctx context.Context) (Serving, error) {
	if r.c.Roles == nil {
		return nil, nil
	}
	return r.c.Roles.ServedBy(ctx)
}

// node is what a selector reads of a report's node.
func node(p store.PackageReport) store.Node {
	return store.Node{ID: p.NodeID, Name: p.NodeName, Labels: p.Labels, Facts: p.Facts}
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

// Effective is the config in force: the plane's, with the critical list an admin set at run time in
// place of its own when one is set. It is read from the store each time (one row), so every replica
// judges by the list last set, without a restart or a message between them.
func (r *Room) Effective(ctx context.Context) (Config, store.SecuritySettings, error) {
	c := r.c.Config
	set, err := r.c.Store.SecuritySettingsGet(ctx)
	if err != nil {
		return c, set, err
	}
	if set.Set {
		c.Critical = set.Critical
	}
	return c, set, nil
}

// Thresholds is what the package detectors judge by now: Effective's list and fix age, and the
// packages each node serves by its roles, so the page and the incidents agree after a change at run
// time too. An error reading either is returned, not a list short of what the page would show.
func (r *Room) Thresholds(ctx context.Context) (store.PackageThresholds, error) {
	c, _, err := r.Effective(ctx)
	if err != nil {
		return c.Thresholds(), err
	}
	t := c.Thresholds()
	serving, err := r.serving(ctx)
	if err != nil || serving == nil {
		return t, err
	}
	// The active nodes with what selectors match, from the view's query without its probes.
	nodes, err := r.c.Store.PackageReportList(ctx, store.PackageReportListParams{Word: Word, Selectable: true})
	if err != nil {
		return t, err
	}
	for _, p := range nodes {
		s := serving(node(p))
		if len(s.Packages) == 0 {
			continue
		}
		if t.Served == nil {
			t.Served = map[string][]string{}
		}
		names := make([]string, 0, len(s.Packages))
		for name := range s.Packages {
			names = append(names, name)
		}
		slices.Sort(names)
		t.Served[p.NodeID] = names
	}
	return t, nil
}

// Critical answers the critical list in force, where it comes from, and the plane's own.
func (r *Room) Critical(ctx context.Context, _ api.Token) (api.SecurityCritical, error) {
	c, set, err := r.Effective(ctx)
	if err != nil {
		return api.SecurityCritical{}, err
	}
	return r.critical(c, set), nil
}

func (r *Room) critical(c Config, set store.SecuritySettings) api.SecurityCritical {
	out := api.SecurityCritical{Critical: nonNil(c.Critical), Source: api.CriticalFromPlane, Plane: nonNil(r.c.Config.Critical)}
	if set.Set {
		out.Source, out.UpdatedBy, out.UpdatedAt = api.CriticalFromSet, set.UpdatedBy, set.UpdatedAt
	}
	return out
}

// CriticalSet stores the critical list an admin gave (stored, so every replica and a restart keep it;
// the audit middleware records who asked), or forgets it on Reset. Refused:
// security.critical_invalid, nothing changed.
func (r *Room) CriticalSet(ctx context.Context, who api.Token, req api.SecurityCriticalRequest) (api.SecurityCritical, error) {
	if req.Reset && len(req.Critical) > 0 {
		return api.SecurityCritical{}, errcode.New(errcode.SecurityCriticalInvalid, "a reset takes no list").With(errcode.DetailReason, "reset_with_list")
	}
	// A body without the list is refused, not read as an empty one: that would make no package
	// critical, a change nobody asked for.
	if req.Critical == nil && !req.Reset {
		return api.SecurityCritical{}, errcode.New(errcode.SecurityCriticalInvalid, "name the critical list (an empty one for none), or reset").
			With(errcode.DetailReason, "missing")
	}
	set, err := r.c.Store.SecuritySettingsSet(ctx, store.SecuritySettingsSetParams{Critical: req.Critical, Reset: req.Reset, By: who.Name, Now: r.c.Now()})
	if err != nil {
		return api.SecurityCritical{}, err
	}
	c := r.c.Config
	if set.Set {
		c.Critical = set.Critical
	}
	return r.critical(c, set), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Judge reads every active node's reports in one query and classifies each, by the config in force and
// what each node serves.
func (r *Room) Judge(ctx context.Context) ([]Judged, time.Time, error) {
	cfg, _, err := r.Effective(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	return r.judge(ctx, cfg)
}

func (r *Room) judge(ctx context.Context, cfg Config) ([]Judged, time.Time, error) {
	now := r.c.Now().UTC()
	serving, err := r.serving(ctx)
	if err != nil {
		return nil, now, err
	}
	reports, err := r.c.Store.PackageReportList(ctx, store.PackageReportListParams{Word: Word,
		RebootCutoff: now.Add(-cfg.RebootAfter), FixCutoff: now.Add(-cfg.FixAge), Narrow: true, Selectable: serving != nil})
	if err != nil {
		return nil, now, err
	}
	out := make([]Judged, 0, len(reports))
	// Nodes on one release with nothing waiting send the same bytes, as do nodes waiting for the same
	// fixes: each distinct report is decoded once (Classify only reads it), and decoding was most of the
	// plane's own part of a view.
	decoded := map[string]*Report{}
	for _, p := range reports {
		in := Input{HasWord: p.HasWord, ReportedAt: p.FinishedAt, OwedBefore: p.OwedBefore, Now: now}
		if serving != nil {
			in.Served = serving(node(p))
		}
		if p.JobID != "" {
			rep, seen := decoded[string(p.Output)]
			if !seen {
				rep = new(Report)
				if json.Unmarshal(p.Output, rep) != nil {
					rep = nil
				}
				decoded[string(p.Output)] = rep
			}
			in.Report = rep
			if len(p.FixesBefore) > 0 {
				_ = json.Unmarshal(p.FixesBefore, &in.FixesBefore) // not a list: nothing aged
			}
		}
		v := Classify(cfg, in)
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
	cfg, set, err := r.Effective(ctx)
	if err != nil {
		return api.SecurityView{}, err
	}
	judged, now, err := r.judge(ctx, cfg)
	if err != nil {
		return api.SecurityView{}, err
	}
	crit := r.critical(cfg, set)
	v := api.SecurityView{Rows: make([]api.SecurityRow, 0, len(judged)), At: now, Critical: crit.Critical, CriticalSource: crit.Source,
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
