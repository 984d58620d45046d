package sqlstore

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// routeCountsKept is how long a replica's route counts are kept; the detector reads minutes.
const routeCountsKept = time.Hour

const (
	maxReplicaText = 255
	maxServices    = 64
	maxRouteLen    = 512
)

func checkReplicaHeartbeat(p *ReplicaHeartbeatParams) error {
	if err := checkID("id", p.ID); err != nil {
		return err
	}
	for f, v := range map[string]string{"version": p.Version, "address": p.Address} {
		if len(v) > maxReplicaText || !ValidText(v) {
			return invalid(f, "%s is at most %d bytes of UTF-8 without NUL", f, maxReplicaText)
		}
	}
	if p.StartedAt.IsZero() {
		return invalid("started_at", "a replica says when it started")
	}
	if p.Lease < 0 {
		return invalid("lease", "a lease cannot be negative")
	}
	if len(p.Services) > maxServices {
		return invalid("services", "at most %d services", maxServices)
	}
	for _, sv := range p.Services {
		if sv == "" || len(sv) > maxReplicaText || !ValidText(sv) {
			return invalid("services", "a service name is 1 to %d bytes of UTF-8 without NUL", maxReplicaText)
		}
	}
	if p.HeapBytes < 0 || p.RSSBytes < 0 || p.MemoryLimitBytes < 0 {
		return invalid("memory", "memory figures cannot be negative")
	}
	if p.MemoryAlert < 0 || p.MemoryAlert > 1 || p.MemoryAlert != p.MemoryAlert {
		return invalid("memory_alert", "memory_alert is a share in [0, 1]")
	}
	if len(p.Routes) > MaxRoutesPerHeartbeat {
		return invalid("routes", "at most %d route counts in one heartbeat", MaxRoutesPerHeartbeat)
	}
	for _, r := range p.Routes {
		if r.Route == "" || len(r.Route) > maxRouteLen || !ValidText(r.Route) {
			return invalid("routes", "a route is 1 to %d bytes of UTF-8 without NUL", maxRouteLen)
		}
		if r.Requests < 0 || r.Failures < 0 || r.Failures > r.Requests || r.Minute.IsZero() {
			return invalid("routes", "route %s: counts must satisfy 0 <= failures <= requests, with a minute", r.Route)
		}
	}
	return nil
}

func (s *sqlStore) ReplicaHeartbeat(ctx context.Context, p ReplicaHeartbeatParams) (Replica, error) {
	if err := checkReplicaHeartbeat(&p); err != nil {
		return Replica{}, err
	}
	t := now(p.Now)
	lease := p.Lease
	if lease == 0 {
		lease = DefaultReplicaLease
	}
	services := p.Services
	if services == nil {
		services = []string{}
	}
	svc, _ := json.Marshal(services)
	var rep Replica
	err := s.tx(ctx, "replica heartbeat", func(ex sqldb.Execer) error {
		var err error
		rep, err = scanReplica(ex.QueryRow(ctx, s.q.ReplicaUpsert, p.ID, p.Version, p.Address, p.StartedAt.UTC(), t,
			lease.Milliseconds(), string(svc), p.HeapBytes, p.RSSBytes, p.MemoryLimitBytes, p.MemoryAlert))
		if err != nil {
			return err
		}
		for _, r := range p.Routes {
			codes := map[string]int64{}
			for c, n := range r.Codes {
				codes[strconv.Itoa(c)] = n
			}
			cj, _ := json.Marshal(codes)
			if _, err := ex.Exec(ctx, s.q.RouteCountUpsert, p.ID, r.Route, r.Minute.UTC().Truncate(time.Minute),
				r.Requests, r.Failures, string(cj)); err != nil {
				return err
			}
		}
		_, err = ex.Exec(ctx, s.q.RouteCountPrune, p.ID, t.Add(-routeCountsKept))
		return err
	})
	rep.Missing = replicaMissing(rep, t)
	return rep, err
}

func replicaMissing(r Replica, t time.Time) bool { return r.HeartbeatAt.Add(r.Lease).Before(t) }

func (s *sqlStore) ReplicaList(ctx context.Context, p ReplicaListParams) ([]Replica, error) {
	t := now(p.Now)
	var out []Replica
	err := s.read(ctx, "list replicas", func(ex sqldb.Execer) error {
		var err error
		out, err = s.replicas(ctx, ex)
		return err
	})
	for i := range out {
		out[i].Missing = replicaMissing(out[i], t)
	}
	return out, err
}

func (s *sqlStore) replicas(ctx context.Context, ex sqldb.Execer) ([]Replica, error) {
	rs, err := ex.Query(ctx, s.q.ReplicaList)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := []Replica{}
	for rs.Next() {
		r, err := scanReplica(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

func (s *sqlStore) ReplicaForget(ctx context.Context, p ReplicaForgetParams) (Replica, error) {
	if err := checkID("id", p.ID); err != nil {
		return Replica{}, err
	}
	if p.By == "" || len(p.By) > maxActorLen {
		return Replica{}, invalid("by", "by must be 1 to %d bytes", maxActorLen)
	}
	t := now(p.Now)
	var rep Replica
	err := s.tx(ctx, "forget replica", func(ex sqldb.Execer) error {
		var err error
		rep, err = scanReplica(ex.QueryRow(ctx, s.q.ReplicaGetForUpdate, p.ID))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return errcode.New(errcode.ReplicaNotFound, "no replica %s", p.ID).With(errcode.DetailID, p.ID)
		}
		if err != nil {
			return err
		}
		if rep.Missing = replicaMissing(rep, t); !rep.Missing {
			return errcode.New(errcode.ReplicaAlive,
				"replica %s heartbeat at %s and its lease of %s has not run out: stop it first", p.ID,
				rep.HeartbeatAt.Format(time.RFC3339), rep.Lease).With(errcode.DetailID, p.ID)
		}
		// Route counts go with it (ON DELETE CASCADE); its incidents clear at the next reconcile. Who
		// forgot it is noted on the incident that said it was missing, so the timeline keeps the record.
		if _, err := ex.Exec(ctx, s.q.ReplicaDelete, p.ID); err != nil {
			return err
		}
		w := incidentWriter{s: s, ctx: ctx, ex: ex, t: t}
		inc, found, err := w.find(s.q.IncidentOpenFor, "", DetectorReplicaMissing, p.ID)
		if err != nil || !found {
			return err
		}
		_, err = w.event(inc.ID, IncidentEvent{Kind: EventNote, Actor: p.By, Text: "replica forgotten: " + p.ID})
		return err
	})
	return rep, err
}

func scanReplica(r sqldb.Row) (Replica, error) {
	var rep Replica
	var leaseMS int64
	var services []byte
	if err := r.Scan(&rep.ID, &rep.Version, &rep.Address, stamp{&rep.StartedAt}, stamp{&rep.HeartbeatAt}, &leaseMS,
		&services, &rep.HeapBytes, &rep.RSSBytes, &rep.PeakHeapBytes, &rep.PeakRSSBytes, stamp{&rep.PeakAt},
		&rep.MemoryLimitBytes, &rep.MemoryAlert); err != nil {
		return Replica{}, err
	}
	rep.Lease = time.Duration(leaseMS) * time.Millisecond
	if err := json.Unmarshal(services, &rep.Services); err != nil {
		return Replica{}, err
	}
	return rep, nil
}

func (s *sqlStore) MigrationCheck(ctx context.Context) error {
	var applied []Migration
	err := s.read(ctx, "check migrations", func(ex sqldb.Execer) error {
		var err error
		applied, err = s.migrationList(ctx, ex)
		return err
	})
	if err != nil {
		return err
	}
	mine := map[int]string{}
	for _, m := range s.ms {
		mine[m.Version] = m.Name
	}
	have := map[int]bool{}
	for _, a := range applied {
		if name, ok := mine[a.Version]; !ok || name != a.Name {
			return errcode.New(errcode.StoreSchemaNewer,
				"the database has migration %04d_%s, which this binary does not have: a newer plane upgraded it",
				a.Version, a.Name).With(errcode.DetailVersion, a.Version)
		}
		have[a.Version] = true
	}
	for _, m := range s.ms {
		if !have[m.Version] {
			return errcode.New(errcode.StoreMigrationFailed, "migration %04d_%s is not recorded in the database",
				m.Version, m.Name).With(errcode.DetailVersion, m.Version)
		}
	}
	return nil
}
