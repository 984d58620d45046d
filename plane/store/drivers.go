package store

import (
	"context"
	"regexp"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
)

// DriverState is whether an admin enabled a driver. Name is the driver's class and name as the
// release's subject spells it ("dns-rfc2136", "cloud-linode").
type DriverState struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	// Digest is the executable the current release pinned when the driver was last enabled. What runs is
	// always what the current release pins; this says what the admin saw.
	Digest    string    `json:"digest,omitempty"`
	ChangedAt time.Time `json:"changed_at,omitzero"`
	ChangedBy string    `json:"changed_by,omitempty"`
	// Unconfined is the admin's consent, given when the driver was last enabled, to run it where no
	// protection of the plane's files can be applied (goplugin.Options.Unconfined).
	Unconfined bool `json:"unconfined,omitempty"`
}

type DriverSetParams struct {
	Name   string
	Digest string // DriverEnable: lowercase hex sha256; DriverDisable: ignored
	// Unconfined records the consent to run the driver unconfined (DriverEnable; DriverDisable keeps
	// the one last given).
	Unconfined bool
	By         string
	Now        time.Time
}

type DriverGetParams struct {
	Name string
}

// driverNameRE is a driver's name on the plane: <class>-<name>, the form host/goplugin takes.
var driverNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidDriverName reports whether name can name a driver.
func ValidDriverName(name string) bool { return driverNameRE.MatchString(name) }

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
