package sqlstore

import (
	"context"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

func checkDriverName(field, name string) error {
	if !ValidDriverName(name) {
		return invalid(field, "%s %q must be lowercase letters, digits, - and _ (at most 64)", field, name)
	}
	return nil
}

func (s *sqlStore) DriverEnable(ctx context.Context, p DriverSetParams) (DriverState, error) {
	if err := checkHash("digest", p.Digest); err != nil {
		return DriverState{}, err
	}
	return s.driverSet(ctx, p, true)
}

func (s *sqlStore) DriverDisable(ctx context.Context, p DriverSetParams) (DriverState, error) {
	p.Digest, p.Unconfined = "", false
	return s.driverSet(ctx, p, false)
}

func (s *sqlStore) driverSet(ctx context.Context, p DriverSetParams, enabled bool) (DriverState, error) {
	if err := checkDriverName("name", p.Name); err != nil {
		return DriverState{}, err
	}
	if err := checkActor(p.By); err != nil {
		return DriverState{}, err
	}
	var d DriverState
	err := s.tx(ctx, "set driver", func(ex sqldb.Execer) error {
		var err error
		d, err = scanDriverState(ex.QueryRow(ctx, s.q.DriverUpsert, p.Name, enabled, p.Digest, now(p.Now), p.By, p.Unconfined))
		return err
	})
	return d, err
}

func (s *sqlStore) DriverGet(ctx context.Context, p DriverGetParams) (DriverState, error) {
	if err := checkDriverName("name", p.Name); err != nil {
		return DriverState{}, err
	}
	var d DriverState
	err := s.read(ctx, "get driver", func(ex sqldb.Execer) error {
		var err error
		d, err = scanDriverState(ex.QueryRow(ctx, s.q.DriverGet, p.Name))
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			d, err = DriverState{Name: p.Name}, nil
		}
		return err
	})
	return d, err
}

func (s *sqlStore) DriverList(ctx context.Context) ([]DriverState, error) {
	out := []DriverState{}
	err := s.read(ctx, "list drivers", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.DriverList)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			d, err := scanDriverState(rs)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rs.Err()
	})
	return out, err
}

func scanDriverState(r sqldb.Row) (DriverState, error) {
	var d DriverState
	err := r.Scan(&d.Name, &d.Enabled, &d.Digest, stamp{&d.ChangedAt}, &d.ChangedBy, &d.Unconfined)
	return d, err
}
