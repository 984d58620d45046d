package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// Defaults of the plane's own detectors (store.HealthThresholds documents them).
const (
	defaultDriverWindow     = 15 * time.Minute
	defaultDriverRestarts   = 2
	defaultDriverFailures   = 5
	defaultRouteWindow      = 5 * time.Minute
	defaultRouteMinRequests = 20
	defaultRouteFailShare   = 0.5
)

func checkHealth(h HealthThresholds) error {
	if h.DriverWindow < 0 || h.DriverRestarts < 0 || h.DriverFailures < 0 || h.RouteWindow < 0 || h.RouteMinRequests < 0 {
		return invalid("health", "health thresholds cannot be negative")
	}
	if h.RouteFailShare < 0 || h.RouteFailShare >= 1 || h.RouteFailShare != h.RouteFailShare {
		return invalid("health", "route_fail_share is a share in [0, 1)")
	}
	return nil
}

func healthDefaults(h HealthThresholds) HealthThresholds {
	if h.DriverWindow == 0 {
		h.DriverWindow = defaultDriverWindow
	}
	if h.DriverRestarts == 0 {
		h.DriverRestarts = defaultDriverRestarts
	}
	if h.DriverFailures == 0 {
		h.DriverFailures = defaultDriverFailures
	}
	if h.RouteWindow == 0 {
		h.RouteWindow = defaultRouteWindow
	}
	if h.RouteMinRequests == 0 {
		h.RouteMinRequests = defaultRouteMinRequests
	}
	if h.RouteFailShare == 0 {
		h.RouteFailShare = defaultRouteFailShare
	}
	return h
}

// driverDetector finds the enabled drivers that keep failing: restarted more than DriverRestarts times in
// the window, or whose last DriverFailures calls all failed for the driver's own sake, with no success
// since. Both read the audit log of driver calls, where the driver manager records restarts too.
func (s *sqlStore) driverDetector(h HealthThresholds, t time.Time) detector {
	h = healthDefaults(h)
	codes, _ := json.Marshal(DriverFailureCodes)
	return detector{
		source: DetectorDriverFailing, severity: SeverityCritical,
		cleared: "the driver answers again (or is disabled, or its failures left the window)",
		find: func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error) {
			rs, err := ex.Query(ctx, s.q.DetectDrivers, t.Add(-h.DriverWindow), OpDriverRestart, string(codes), CodeOK)
			if err != nil {
				return nil, err
			}
			defer rs.Close()
			out := map[condKey]finding{}
			for rs.Next() {
				var name string
				var restarts, streak int64
				var lastFail, lastOK time.Time
				if err := rs.Scan(&name, &restarts, &streak, stamp{&lastFail}, stamp{&lastOK}); err != nil {
					return nil, err
				}
				failing := lastFail.After(lastOK) && (restarts > int64(h.DriverRestarts) || streak >= int64(h.DriverFailures))
				if !failing {
					continue
				}
				var why []string
				if restarts > int64(h.DriverRestarts) {
					why = append(why, fmt.Sprintf("restarted %d times", restarts))
				}
				if streak > 0 {
					why = append(why, fmt.Sprintf("%d calls failed in a row", streak))
				}
				out[condKey{subject: name}] = finding{summary: fmt.Sprintf("driver %s keeps failing: %s in the last %s, the last at %s",
					name, strings.Join(why, " and "), h.DriverWindow, lastFail.Format(time.RFC3339))}
			}
			return out, rs.Err()
		},
	}
}

// memoryDetector finds the live replicas whose memory (RSS; the Go heap where RSS is unknown) is above
// the share of their limit each was configured to alert at. A missing replica is left to
// plane:replica_missing.
func (s *sqlStore) memoryDetector(t time.Time) detector {
	return detector{
		source: DetectorMemory, severity: SeverityWarning,
		cleared: "the replica's memory is back under its alert share (or it stopped heartbeating)",
		find: func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error) {
			reps, err := s.replicas(ctx, ex)
			if err != nil {
				return nil, err
			}
			out := map[condKey]finding{}
			for _, r := range reps {
				used := r.RSSBytes
				if used == 0 {
					used = r.HeapBytes
				}
				if replicaMissing(r, t) || r.MemoryAlert <= 0 || r.MemoryLimitBytes <= 0 ||
					float64(used) <= r.MemoryAlert*float64(r.MemoryLimitBytes) {
					continue
				}
				out[condKey{subject: r.ID}] = finding{summary: fmt.Sprintf(
					"replica %s uses %s (%.0f%% of its %s limit; alert above %.0f%%), heap %s, peak %s",
					r.ID, mib(used), 100*float64(used)/float64(r.MemoryLimitBytes), mib(r.MemoryLimitBytes),
					100*r.MemoryAlert, mib(r.HeapBytes), mib(max(r.PeakRSSBytes, r.PeakHeapBytes)))}
			}
			return out, nil
		},
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// routeDetector finds the route patterns whose share of 5xx answers, summed over every replica in the
// window, is above RouteFailShare with at least RouteMinRequests requests.
func (s *sqlStore) routeDetector(h HealthThresholds, t time.Time) detector {
	h = healthDefaults(h)
	return detector{
		source: DetectorRouteFailing, severity: SeverityCritical,
		cleared: "the route's 5xx share is back under the threshold",
		find: func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error) {
			rs, err := ex.Query(ctx, s.q.DetectRoutes, t.Add(-h.RouteWindow))
			if err != nil {
				return nil, err
			}
			defer rs.Close()
			type sum struct {
				requests, failures int64
				codes              map[string]int64
			}
			routes := map[string]*sum{}
			for rs.Next() {
				var route string
				var req, fail int64
				var cj []byte
				if err := rs.Scan(&route, &req, &fail, &cj); err != nil {
					return nil, err
				}
				var codes map[string]int64
				if err := json.Unmarshal(cj, &codes); err != nil {
					return nil, err
				}
				sm := routes[route]
				if sm == nil {
					sm = &sum{codes: map[string]int64{}}
					routes[route] = sm
				}
				sm.requests += req
				sm.failures += fail
				for c, n := range codes {
					sm.codes[c] += n
				}
			}
			if err := rs.Err(); err != nil {
				return nil, err
			}
			out := map[condKey]finding{}
			for route, sm := range routes {
				if sm.requests < int64(h.RouteMinRequests) || float64(sm.failures) <= h.RouteFailShare*float64(sm.requests) {
					continue
				}
				codes := make([]string, 0, len(sm.codes))
				for c := range sm.codes {
					codes = append(codes, c)
				}
				sort.Slice(codes, func(i, j int) bool { a, _ := strconv.Atoi(codes[i]); b, _ := strconv.Atoi(codes[j]); return a < b })
				seen := make([]string, len(codes))
				for i, c := range codes {
					seen[i] = fmt.Sprintf("%s×%d", c, sm.codes[c])
				}
				out[condKey{subject: route}] = finding{summary: fmt.Sprintf("route %s answered %d of %d requests with 5xx in the last %s (codes %s)",
					route, sm.failures, sm.requests, h.RouteWindow, strings.Join(seen, ", "))}
			}
			return out, nil
		},
	}
}

// replicaDetector finds the replicas silent past their lease. A forgotten replica has no row, so its
// incident clears. Like agent silence, it is counted from this plane process's start (up) as well: a
// plane that was down (all of it, after an outage) has heard no heartbeat, and until it has been up for
// a replica's lease it cannot tell a stopped replica from one still starting, so it holds its judgement.
func (s *sqlStore) replicaDetector(up, t time.Time) detector {
	return detector{
		source: DetectorReplicaMissing, severity: SeverityCritical,
		cleared: "the replica heartbeats again, or was forgotten",
		find: func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error) {
			reps, err := s.replicas(ctx, ex)
			if err != nil {
				return nil, err
			}
			out := map[condKey]finding{}
			for _, r := range reps {
				if !replicaMissing(r, t) {
					continue
				}
				f := finding{hold: !up.IsZero() && up.Add(r.Lease).After(t)}
				f.summary = fmt.Sprintf(
					"replica %s (%s, version %s) has not heartbeat since %s, past its lease of %s; it ran %s",
					r.ID, r.Address, r.Version, r.HeartbeatAt.Format(time.RFC3339), r.Lease, strings.Join(r.Services, ", "))
				out[condKey{subject: r.ID}] = f
			}
			return out, nil
		},
	}
}
