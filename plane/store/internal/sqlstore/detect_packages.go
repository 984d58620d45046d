package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// packagesWord is the word whose reports the package detectors read, as the fleet security view does.
const packagesWord = "packages_report"

// packageReports runs PackageReportList's query inside the reconcile's transaction and calls each
// for every node with a report. The older report is looked up narrowly (Narrow): a fix that waited
// then counts only if it waits now, so nodes with none waiting need no lookup.
func (s *sqlStore) packageReports(ctx context.Context, ex sqldb.Execer, fixCutoff time.Time, each func(r PackageReport) (finding, bool)) (map[string]finding, error) {
	rows, err := ex.Query(ctx, s.q.PackageReportList, packagesWord, nil, at(fixCutoff), true, false)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]finding{}
	for rows.Next() {
		r, err := scanPackageReport(rows)
		if err != nil {
			return nil, err
		}
		if r.JobID == "" {
			continue
		}
		if f, ok := each(r); ok {
			out[r.NodeID] = f
		}
	}
	return out, rows.Err()
}

// oldCodeDetector opens plane:old_code_serving on a node whose newest report names services on
// replaced code.
func (s *sqlStore) oldCodeDetector() detector {
	return detector{
		source: DetectorOldCodeServing, severity: SeverityWarning,
		cleared: "the node's newest packages_report names no service on replaced code",
		find: onNodes(func(ctx context.Context, ex sqldb.Execer) (map[string]finding, error) {
			return s.packageReports(ctx, ex, time.Time{}, func(r PackageReport) (finding, bool) {
				var rep struct {
					Stale []struct {
						Unit string `json:"unit"`
					} `json:"stale_services"`
				}
				if json.Unmarshal(r.Output, &rep) != nil || len(rep.Stale) == 0 {
					return finding{}, false
				}
				units := make([]string, 0, len(rep.Stale))
				for _, u := range rep.Stale {
					units = append(units, u.Unit)
				}
				return finding{summary: fmt.Sprintf("services run code an upgrade replaced: %s (restart_services restarts them)", strings.Join(units, ", "))}, true
			})
		}),
	}
}

// criticalFixDetector opens plane:critical_fix_waiting on a node where a critical package's fix (one
// the patterns match, or one the node serves by its roles) waited in its newest report at least FixAge
// old and still waits in its newest.
func (s *sqlStore) criticalFixDetector(p PackageThresholds, t time.Time) detector {
	age := p.FixAge
	if age <= 0 {
		age = 24 * time.Hour
	}
	return detector{
		source: DetectorCriticalFixWaiting, severity: SeverityCritical,
		skip:    len(p.Critical) == 0 && len(p.Served) == 0,
		cleared: "no critical fix has waited past its age",
		find: onNodes(func(ctx context.Context, ex sqldb.Execer) (map[string]finding, error) {
			return s.packageReports(ctx, ex, t.Add(-age), func(r PackageReport) (finding, bool) {
				type fix struct {
					Name string `json:"name"`
				}
				var now struct {
					Fixes []fix `json:"security_upgrades"`
				}
				var before []fix
				if json.Unmarshal(r.Output, &now) != nil || json.Unmarshal(r.FixesBefore, &before) != nil {
					return finding{}, false
				}
				var late []string
				served := p.Served[r.NodeID]
				for _, f := range now.Fixes {
					if !slices.ContainsFunc(before, func(b fix) bool { return b.Name == f.Name }) {
						continue
					}
					switch {
					case slices.Contains(served, f.Name):
						late = append(late, f.Name+" (served by the node's roles)")
					case slices.ContainsFunc(p.Critical, func(pat string) bool { ok, _ := path.Match(pat, f.Name); return ok }):
						late = append(late, f.Name)
					}
				}
				if len(late) == 0 {
					return finding{}, false
				}
				return finding{summary: fmt.Sprintf("critical security fix(es) waiting over %s: %s (install_security_updates installs them)", age, strings.Join(late, ", "))}, true
			})
		}),
	}
}
