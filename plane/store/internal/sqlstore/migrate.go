package sqlstore

import (
	"context"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// migrate applies, in one transaction, every migration the database has not recorded. Replicas that
// start together queue on the dialect's migration lock, so each migration runs once; running it again
// finds nothing to do. A database that records a migration this binary does not know is refused:
// a newer plane upgraded it, and this one would misread it.
func (s *sqlStore) migrate(ctx context.Context, ms []sqldb.Migration) error {
	return s.tx(ctx, "migrate", func(ex sqldb.Execer) error {
		if s.q.MigrationLock != "" {
			if _, err := ex.Exec(ctx, s.q.MigrationLock); err != nil {
				return err
			}
		}
		if _, err := ex.Exec(ctx, s.q.MigrationTable); err != nil {
			return err
		}
		applied, err := s.migrationList(ctx, ex)
		if err != nil {
			return err
		}
		latest := ms[len(ms)-1].Version
		names := map[int]string{}
		for _, m := range ms {
			names[m.Version] = m.Name
		}
		done := map[int]bool{}
		for _, a := range applied {
			if a.Version > latest {
				return errcode.New(errcode.StoreSchemaNewer,
					"the database has migration %04d_%s, newer than this binary's %04d; run the newer plane",
					a.Version, a.Name, latest).With(errcode.DetailVersion, a.Version)
			}
			// A number recorded under another name was applied by a build that gave it other SQL (two
			// branches that took the same number while apart): skipping it would leave this binary's
			// tables missing.
			if names[a.Version] != a.Name {
				return errcode.New(errcode.StoreMigrationFailed,
					"the database records migration %04d_%s where this binary has %04d_%s: it was made by another build; nothing changed",
					a.Version, a.Name, a.Version, names[a.Version]).With(errcode.DetailVersion, a.Version)
			}
			done[a.Version] = true
		}
		at := now(time.Time{})
		for _, m := range ms {
			if done[m.Version] {
				continue
			}
			if _, err := ex.Exec(ctx, m.SQL); err != nil {
				return errcode.Wrap(err, errcode.StoreMigrationFailed, "migration %04d_%s failed", m.Version, m.Name).
					With(errcode.DetailVersion, m.Version)
			}
			if _, err := ex.Exec(ctx, s.q.MigrationInsert, int64(m.Version), m.Name, at); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *sqlStore) MigrationList(ctx context.Context) ([]Migration, error) {
	var out []Migration
	err := s.read(ctx, "list migrations", func(ex sqldb.Execer) error {
		var err error
		out, err = s.migrationList(ctx, ex)
		return err
	})
	return out, err
}

func (s *sqlStore) migrationList(ctx context.Context, ex sqldb.Execer) ([]Migration, error) {
	rs, err := ex.Query(ctx, s.q.MigrationList)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Migration
	for rs.Next() {
		var m Migration
		var v int64
		if err := rs.Scan(&v, &m.Name, stamp{&m.AppliedAt}); err != nil {
			return nil, err
		}
		m.Version = int(v)
		out = append(out, m)
	}
	return out, rs.Err()
}
