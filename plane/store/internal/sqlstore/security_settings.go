package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

func (s *sqlStore) SecuritySettingsGet(ctx context.Context) (SecuritySettings, error) {
	var out SecuritySettings
	err := s.read(ctx, "get security settings", func(ex sqldb.Execer) error {
		var raw []byte
		err := ex.QueryRow(ctx, s.q.SecuritySettingsGet).Scan(&raw, &out.UpdatedBy, stamp{&out.UpdatedAt})
		if s.drv.Kind(err) == sqldb.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		out.Set = true
		out.Critical = []string{}
		return json.Unmarshal(raw, &out.Critical)
	})
	return out, err
}

func (s *sqlStore) SecuritySettingsSet(ctx context.Context, p SecuritySettingsSetParams) (SecuritySettings, error) {
	if err := checkActor(p.By); err != nil {
		return SecuritySettings{}, err
	}
	if p.Reset {
		if len(p.Critical) > 0 {
			return SecuritySettings{}, invalid("critical", "a reset takes no list")
		}
		return SecuritySettings{}, s.write(ctx, "reset security settings", func(ex sqldb.Execer) error {
			_, err := ex.Exec(ctx, s.q.SecuritySettingsDelete)
			return err
		})
	}
	if err := CheckCritical(p.Critical); err != nil {
		return SecuritySettings{}, err
	}
	list := append([]string{}, p.Critical...)
	raw, err := json.Marshal(list)
	if err != nil {
		return SecuritySettings{}, err
	}
	out := SecuritySettings{Set: true, Critical: list, UpdatedBy: p.By, UpdatedAt: now(p.Now)}
	return out, s.write(ctx, "set security settings", func(ex sqldb.Execer) error {
		_, err := ex.Exec(ctx, s.q.SecuritySettingsPut, string(raw), out.UpdatedBy, out.UpdatedAt)
		return err
	})
}
