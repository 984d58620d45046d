package dns

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Mock is an in-memory DNS driver for tests of code that drives DNS. It normalizes and refuses input
// like a real driver, answers with the contract's codes and passes the conformance suite
// (sdk/driver/drivertest). Its zones come from the settings ({"zones": ["example.com"]}, default
// example.com). It must be configured (any non-empty credential) before provider calls.
type Mock struct {
	mu         sync.Mutex
	configured bool
	seq        int
	zones      map[string][]Record
}

// MockDefaultTTL is the TTL a Mock gives records written with none.
const MockDefaultTTL = time.Hour

const mockSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {"zones": {"type": "array", "items": {"type": "string"}, "maxItems": 100}}
}`

func (m *Mock) Info(context.Context) (driver.Info, error) {
	return driver.Info{Kind: driver.KindDNS, Name: "mock", Version: "1.0.0", APIVersions: APIVersions()}, nil
}

func (m *Mock) ConfigSchema(context.Context) (json.RawMessage, error) {
	return json.RawMessage(mockSchema), nil
}

func (m *Mock) SetConfig(_ context.Context, cfg driver.Config) error {
	var s struct {
		Zones []string `json:"zones"`
	}
	if err := driver.DecodeSettings(cfg.Settings, &s); err != nil {
		return err
	}
	if cfg.Credential.IsZero() {
		return errcode.New(errcode.DriverConfigInvalid, "the mock needs a credential").With(errcode.DetailField, "credential")
	}
	if len(s.Zones) == 0 {
		s.Zones = []string{"example.com."}
	}
	zones := map[string][]Record{}
	for _, z := range s.Zones {
		n, err := NormalizeZone(z)
		if err != nil {
			return errcode.Wrap(err, errcode.DriverConfigInvalid, "zones: %q is not a zone name", z).With(errcode.DetailField, "/zones")
		}
		zones[n] = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for z := range zones {
		if old, ok := m.zones[z]; ok {
			zones[z] = old
		}
	}
	m.zones, m.configured = zones, true
	return nil
}

// zone takes the lock and returns the canonical zone name; the caller unlocks on success.
func (m *Mock) zone(zone string) (string, error) {
	z, err := NormalizeZone(zone)
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	if !m.configured {
		m.mu.Unlock()
		return "", errcode.New(errcode.DriverNotConfigured, "the mock has no account yet")
	}
	if _, ok := m.zones[z]; !ok {
		m.mu.Unlock()
		return "", NotFound(zone)
	}
	return z, nil
}

func (m *Mock) ListZones(context.Context) ([]Zone, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.configured {
		return nil, errcode.New(errcode.DriverNotConfigured, "the mock has no account yet")
	}
	var out []Zone
	for z := range m.zones {
		out = append(out, Zone{Name: z})
	}
	slices.SortFunc(out, func(a, b Zone) int { return compare(a.Name, b.Name) })
	return out, nil
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (m *Mock) GetRecords(_ context.Context, zone string) ([]Record, error) {
	z, err := m.zone(zone)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return slices.Clone(m.zones[z]), nil
}

// stamp gives a record an id and the default TTL; the caller holds the lock.
func (m *Mock) stamp(r Record) Record {
	m.seq++
	r.ID = "r" + strconv.Itoa(m.seq)
	if r.TTL == 0 {
		r.TTL = MockDefaultTTL
	}
	return r
}

func (m *Mock) AppendRecords(_ context.Context, zone string, recs []Record) ([]Record, error) {
	in, err := NormalizeAll(recs)
	if err != nil {
		return nil, err
	}
	z, err := m.zone(zone)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var added []Record
	for _, r := range PlanAppend(m.zones[z], in) {
		r = m.stamp(r)
		m.zones[z] = append(m.zones[z], r)
		added = append(added, r)
	}
	return added, nil
}

func (m *Mock) SetRecords(_ context.Context, zone string, recs []Record) ([]Record, error) {
	in, err := NormalizeAll(recs)
	if err != nil {
		return nil, err
	}
	z, err := m.zone(zone)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	del, add := PlanSet(m.zones[z], in)
	m.zones[z] = slices.DeleteFunc(m.zones[z], func(r Record) bool { return slices.Contains(del, r) })
	for _, r := range add {
		m.zones[z] = append(m.zones[z], m.stamp(r))
	}
	var out []Record
	for _, r := range m.zones[z] {
		if slices.ContainsFunc(in, func(w Record) bool { return Same(w, r) }) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *Mock) DeleteRecords(_ context.Context, zone string, recs []Record) ([]Record, error) {
	if len(recs) > MaxRecords {
		return nil, invalid("records", "at most %d records per call", MaxRecords)
	}
	var patterns []Record
	for _, r := range recs {
		p, err := NormalizePattern(r)
		if err != nil {
			return nil, err
		}
		patterns = append(patterns, p)
	}
	z, err := m.zone(zone)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	del := PlanDelete(m.zones[z], patterns)
	m.zones[z] = slices.DeleteFunc(m.zones[z], func(r Record) bool { return slices.Contains(del, r) })
	return del, nil
}

var _ Driver = (*Mock)(nil)
