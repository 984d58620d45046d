package drivers

import (
	"context"
	"encoding/json"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
)

// ConfigSchema returns the JSON Schema of an enabled driver's account settings: what a form for a new
// account is made from. A schema is fixed by the executable, so it is asked of a process of it once per
// digest, started for the purpose and stopped, and kept; the call is audited like any other. Refused:
// driver.disabled, driver.not_pinned, and whatever the driver answers.
func (m *Manager) ConfigSchema(ctx context.Context, actor, name string) (api.DriverSchema, error) {
	life, err := m.slotFor(name)
	if err != nil {
		return api.DriverSchema{}, err
	}
	life.life.RLock()
	defer life.life.RUnlock()
	e, err := m.usable(ctx, name)
	if err != nil {
		return api.DriverSchema{}, err
	}
	out := api.DriverSchema{Name: e.Name, Kind: string(e.Kind), Version: e.Version, Digest: e.Digest}
	if s, ok := m.schemas.Load(e.Digest); ok {
		out.Schema = s.(json.RawMessage)
		return out, nil
	}
	t0 := m.cfg.Now()
	raw, err := m.askSchema(ctx, e)
	m.record(ctx, actor, "", e.Name, store.OpDriverConfigSchema, "", t0, err)
	if err != nil {
		return api.DriverSchema{}, err
	}
	m.schemas.Store(e.Digest, raw)
	out.Schema = raw
	return out, nil
}

func (m *Manager) askSchema(ctx context.Context, e Entry) (json.RawMessage, error) {
	d, err := m.start(ctx, e)
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	if e.Kind == driver.KindCloud {
		c, err := d.Cloud()
		if err != nil {
			return nil, err
		}
		return c.ConfigSchema(ctx)
	}
	n, err := d.DNS()
	if err != nil {
		return nil, err
	}
	return n.ConfigSchema(ctx)
}
