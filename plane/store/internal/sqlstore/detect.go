package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// A detector is one of the plane's own conditions: a query over stored state naming the nodes (or, for
// the plane's own health, the subjects: drivers, replicas, routes) where the condition holds now.
// Detectors never probe anything; they read what the plane already keeps.
type detector struct {
	source   string
	severity Severity
	// skip says the detector cannot judge yet (the plane has not been up long enough to call anyone
	// silent): its incidents are then left as they are, neither opened nor cleared.
	skip    bool
	find    func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error)
	cleared string // the text of the cleared event
}

type finding struct {
	summary string
	// hold: the detector cannot judge this one yet; an open incident stays open, none is opened.
	hold bool
}

// condKey is what one incident of a source is about: a node, or (node "") a subject of the plane.
type condKey struct{ node, subject string }

// onNodes keys a detector's findings by node.
func onNodes(find func(ctx context.Context, ex sqldb.Execer) (map[string]finding, error)) func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error) {
	return func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error) {
		m, err := find(ctx, ex)
		out := make(map[condKey]finding, len(m))
		for id, f := range m {
			out[condKey{node: id}] = f
		}
		return out, err
	}
}

func checkIncidentReconcile(p *IncidentReconcileParams) error {
	if p.SilentAfter < 0 || p.RefusalThreshold < 0 || p.LostThreshold < 0 || p.ExpiryLead < 0 {
		return invalid("silent_after", "detector settings cannot be negative")
	}
	if err := checkHealth(p.Health); err != nil {
		return err
	}
	if err := checkNotify(p.Notify); err != nil {
		return err
	}
	return checkReopen(p.ReopenWithin)
}

func (s *sqlStore) detectors(p IncidentReconcileParams, t time.Time) []detector {
	silentAfter := p.SilentAfter
	if silentAfter == 0 {
		silentAfter = defaultSilentAfter
	}
	refusals := p.RefusalThreshold
	if refusals == 0 {
		refusals = DefaultRefusalThreshold
	}
	silentBefore := t.Add(-silentAfter)
	since := t.Add(-detectorWindow)
	return append([]detector{
		{
			source: DetectorAgentSilent, severity: SeverityCritical,
			skip:    !p.Up.IsZero() && p.Up.After(silentBefore),
			cleared: "the agent claimed again",
			find: onNodes(func(ctx context.Context, ex sqldb.Execer) (map[string]finding, error) {
				return collect(ctx, ex, s.q.DetectSilent, []any{silentBefore}, func(r sqldb.Row) (string, finding, error) {
					var id string
					var seen, created time.Time
					if err := r.Scan(&id, stamp{&seen}, stamp{&created}); err != nil {
						return "", finding{}, err
					}
					if seen.IsZero() {
						return id, finding{summary: fmt.Sprintf("the agent has not claimed since the node was approved at %s",
							created.Format(time.RFC3339))}, nil
					}
					return id, finding{summary: fmt.Sprintf("the agent has not claimed for over %s; its last claim was at %s",
						silentAfter, seen.Format(time.RFC3339))}, nil
				})
			}),
		},
		s.jobDetector(DetectorRefusals, JobRefused, since, refusals,
			fmt.Sprintf("%%d jobs refused in the last hour, more than %d", refusals),
			"refusals in the last hour are back at or below the threshold"),
		s.jobDetector(DetectorLostJobs, JobLost, since, p.LostThreshold,
			"%d jobs lost in the last hour",
			"no job lost in the last hour"),
		{
			source: DetectorUntrustedRelease, severity: SeverityCritical,
			cleared: "the node verifies the plane's statement again",
			find: onNodes(func(ctx context.Context, ex sqldb.Execer) (map[string]finding, error) {
				return collect(ctx, ex, s.q.DetectUntrusted, nil, func(r sqldb.Row) (string, finding, error) {
					var id, why string
					err := r.Scan(&id, &why)
					return id, finding{summary: "the node cannot verify the plane's statement: " + why}, err
				})
			}),
		},
		s.driverDetector(p.Health, t),
		s.memoryDetector(t),
		s.routeDetector(p.Health, t),
		s.replicaDetector(p.Up, t),
		s.rolloutDetector(),
		s.oldCodeDetector(),
		s.criticalFixDetector(p.Packages, t),
		s.logSplitDetector(),
		s.expiryDetector(p.ExpiryLead, t),
		{
			source: DetectorAgentUpdateRefused, severity: SeverityWarning,
			cleared: "the node runs the agent its statement pins",
			find: onNodes(func(ctx context.Context, ex sqldb.Execer) (map[string]finding, error) {
				return collect(ctx, ex, s.q.DetectUpdateRefused, []any{DetectorAgentUpdateRefused}, func(r sqldb.Row) (string, finding, error) {
					var id, state, offered string
					var report []byte
					if err := r.Scan(&id, &state, &offered, &report); err != nil {
						return "", finding{}, err
					}
					var u NodeUpdate
					_ = json.Unmarshal(report, &u)
					return id, finding{summary: fmt.Sprintf("the node refused agent %s (%s): %s", offered, state, u.Reason)}, nil
				})
			}),
		},
		{
			source: DetectorMachineTransfer, severity: SeverityWarning,
			cleared: "the instance's transfer is below 80% of its allowance",
			find: func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error) {
				m, err := collect(ctx, ex, s.q.DetectMachineTransfer, nil, func(r sqldb.Row) (string, finding, error) {
					var id, name, instance string
					var used, allowance int64
					if err := r.Scan(&id, &name, &instance, &used, &allowance); err != nil {
						return "", finding{}, err
					}
					return id, finding{summary: fmt.Sprintf("%s (instance %s) used %d%% of its monthly transfer: %d of %d bytes",
						name, instance, used*100/allowance, used, allowance)}, nil
				})
				out := make(map[condKey]finding, len(m))
				for id, f := range m {
					out[condKey{subject: "provisioning:" + id}] = f
				}
				return out, err
			},
		},
		{
			source: DetectorProvisioningOrphan, severity: SeverityCritical,
			cleared: "the provisioning's instance was deleted",
			find: func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error) {
				m, err := collect(ctx, ex, s.q.DetectProvisioningOrphans, nil, func(r sqldb.Row) (string, finding, error) {
					var id, name, account, instance, reason string
					if err := r.Scan(&id, &name, &account, &instance, &reason); err != nil {
						return "", finding{}, err
					}
					return id, finding{summary: fmt.Sprintf("provisioning %s of %s failed and its instance %s on account %s could not be deleted: %s",
						id, name, instance, account, reason)}, nil
				})
				out := make(map[condKey]finding, len(m))
				for id, f := range m {
					out[condKey{subject: "provisioning:" + id}] = f
				}
				return out, err
			},
		},
	}, s.backupDetectors()...)
}

// expiryDetector finds the releases active nodes are served that expire within lead: a node still
// holding one then freezes its vocabulary.
func (s *sqlStore) expiryDetector(lead time.Duration, t time.Time) detector {
	if lead == 0 {
		lead = DefaultExpiryLead
	}
	return detector{
		source: DetectorReleaseExpiring, severity: SeverityWarning,
		cleared: "no active node is served a release that expires soon",
		find: func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error) {
			m, err := collect(ctx, ex, s.q.DetectReleaseExpiring, []any{t.Add(lead)}, func(r sqldb.Row) (string, finding, error) {
				var seq, nodes int64
				var version string
				var expires time.Time
				if err := r.Scan(&seq, &version, stamp{&expires}, &nodes); err != nil {
					return "", finding{}, err
				}
				when := "expires"
				if !expires.After(t) {
					when = "expired"
				}
				return fmt.Sprintf("release:%d", seq), finding{summary: fmt.Sprintf(
					"release %s (sequence %d), which %d active nodes are served, %s at %s: publish a newer one and roll it out, or those nodes stop running what it pins",
					version, seq, nodes, when, expires.UTC().Format(time.RFC3339))}, nil
			})
			out := make(map[condKey]finding, len(m))
			for subject, f := range m {
				out[condKey{subject: subject}] = f
			}
			return out, err
		},
	}
}

// jobDetector finds nodes with more than threshold jobs in state since the window began.
func (s *sqlStore) jobDetector(source string, state JobState, since time.Time, threshold int, summary, cleared string) detector {
	return detector{
		source: source, severity: SeverityWarning, cleared: cleared,
		find: onNodes(func(ctx context.Context, ex sqldb.Execer) (map[string]finding, error) {
			return collect(ctx, ex, s.q.DetectJobs, []any{string(state), since, int64(threshold)}, func(r sqldb.Row) (string, finding, error) {
				var id string
				var n int64
				err := r.Scan(&id, &n)
				return id, finding{summary: fmt.Sprintf(summary, n)}, err
			})
		}),
	}
}

func collect(ctx context.Context, ex sqldb.Execer, query string, args []any, scan func(sqldb.Row) (string, finding, error)) (map[string]finding, error) {
	rs, err := ex.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]finding{}
	for rs.Next() {
		id, f, err := scan(rs)
		if err != nil {
			return nil, err
		}
		out[id] = f
	}
	return out, rs.Err()
}

func (s *sqlStore) IncidentReconcile(ctx context.Context, p IncidentReconcileParams) (IncidentReconcileResult, error) {
	if err := checkIncidentReconcile(&p); err != nil {
		return IncidentReconcileResult{}, err
	}
	t := now(p.Now)
	w := incidentWriter{s: s, ctx: ctx, t: t, reopenWithin: reopenWithin(p.ReopenWithin), notify: p.Notify}
	err := s.tx(ctx, "reconcile incidents", func(ex sqldb.Execer) error {
		w.ex, w.changes = ex, nil
		// Replicas reconcile one at a time, each seeing what the one before it wrote, so that the
		// second finds nothing to do.
		if s.q.IncidentReconcileLock != "" {
			if _, err := ex.Exec(ctx, s.q.IncidentReconcileLock); err != nil {
				return err
			}
		}
		// A node that ended its pairing is not observed any more: its conditions end with it.
		ended, err := s.incidents(ctx, ex, s.q.IncidentOpenOfEndedNodes)
		if err != nil {
			return err
		}
		for _, inc := range ended {
			if err := w.clear(inc, AuthorPlane, "the node is no longer paired with the plane"); err != nil {
				return err
			}
		}
		for _, d := range s.detectors(p, t) {
			if d.skip {
				continue
			}
			if err := w.detect(d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return IncidentReconcileResult{}, err
	}
	return IncidentReconcileResult{Changes: w.changes}, nil
}

// detect brings one detector's incidents in line with what it finds: an incident for every node (or
// subject) where the condition holds, none open elsewhere.
func (w *incidentWriter) detect(d detector) error {
	found, err := d.find(w.ctx, w.ex)
	if err != nil {
		return err
	}
	open, err := w.s.incidents(w.ctx, w.ex, w.s.q.IncidentOpenBySource, d.source)
	if err != nil {
		return err
	}
	isOpen := map[condKey]bool{}
	for _, inc := range open {
		k := condKey{node: inc.NodeID, subject: inc.Subject}
		isOpen[k] = true
		if _, still := found[k]; !still {
			if err := w.clear(inc, AuthorPlane, d.cleared); err != nil {
				return err
			}
		}
	}
	keys := make([]condKey, 0, len(found))
	for k, f := range found {
		if !isOpen[k] && !f.hold {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].node != keys[j].node {
			return keys[i].node < keys[j].node
		}
		return keys[i].subject < keys[j].subject
	})
	for _, k := range keys {
		f := found[k]
		if err := w.raise(raise{nodeID: k.node, subject: k.subject, source: d.source, severity: d.severity,
			summary: f.summary, actor: AuthorPlane, text: f.summary}); err != nil {
			return err
		}
	}
	return nil
}

// incidents runs a query that returns incident rows.
func (s *sqlStore) incidents(ctx context.Context, ex sqldb.Execer, query string, args ...any) ([]Incident, error) {
	rs, err := ex.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Incident
	for rs.Next() {
		inc, err := scanIncident(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, inc)
	}
	return out, rs.Err()
}

// rolloutDetector finds the halted rollouts: each waits for an operator to fix the cause and resume it,
// or to abort or revert it.
func (s *sqlStore) rolloutDetector() detector {
	return detector{
		source: DetectorRolloutHalted, severity: SeverityWarning,
		cleared: "the rollout was resumed, aborted or reverted",
		find: func(ctx context.Context, ex sqldb.Execer) (map[condKey]finding, error) {
			rs, err := ex.Query(ctx, s.q.RolloutList, string(RolloutHalted), int64(MaxListLimit))
			if err != nil {
				return nil, err
			}
			defer rs.Close()
			out := map[condKey]finding{}
			for rs.Next() {
				ro, err := scanRollout(rs)
				if err != nil {
					return nil, err
				}
				what := fmt.Sprintf("release %d", ro.ReleaseSequence)
				if ro.Kind == RolloutJob {
					what = "word " + ro.Word
				}
				out[condKey{subject: ro.ID}] = finding{summary: fmt.Sprintf("rollout %s of %s by %s halted at node %s after %d misses: %s",
					ro.ID, what, ro.CreatedBy, ro.HaltNode, ro.Misses, ro.HaltReason)}
			}
			return out, rs.Err()
		},
	}
}
