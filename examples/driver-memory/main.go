// Command lexicon-driver-dns-memory is an example DNS driver, written the way an outside author writes
// one: it imports only Lexicon's sdk/, keeps its zones in memory, and proves itself with the SDK's
// conformance suite (main_test.go). Build it with
//
//	go build -o lexicon-driver-dns-memory ./examples/driver-memory
//
// and ship it with manifest.json in a release; the plane runs it only by the digest the release pins.
package main

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// version is the driver's own version; keep it equal to manifest.json's.
const version = "1.0.0"

// defaultTTL is what a record written without a TTL gets.
const defaultTTL = 5 * time.Minute

// settings are the account settings: which zones this "account" serves.
type settings struct {
	Zones []string `json:"zones"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["zones"],
  "properties": {
    "zones": {"type": "array", "minItems": 1, "maxItems": 100, "items": {"type": "string", "maxLength": 253}}
  }
}`

// memory is the driver. Every method takes the lock for its whole run, so each call is atomic: a
// refused call changes nothing.
type memory struct {
	mu    sync.Mutex
	zones map[string][]dns.Record // nil until configured
	seq   int
}

func (m *memory) Info(context.Context) (driver.Info, error) {
	return driver.Info{Kind: driver.KindDNS, Name: "memory", Version: version, APIVersions: dns.APIVersions()}, nil
}

func (m *memory) ConfigSchema(context.Context) (json.RawMessage, error) {
	return json.RawMessage(schema), nil
}

// SetConfig takes the zones. The credential is unused (there is no provider) but required, as a real
// driver's would be.
func (m *memory) SetConfig(_ context.Context, cfg driver.Config) error {
	var s settings
	if err := driver.DecodeSettings(cfg.Settings, &s); err != nil {
		return err
	}
	if cfg.Credential.IsZero() {
		return errcode.New(errcode.DriverConfigInvalid, "a credential is required").With(errcode.DetailField, "credential")
	}
	zones := map[string][]dns.Record{}
	for _, z := range s.Zones {
		name, err := dns.NormalizeZone(z)
		if err != nil {
			return errcode.Wrap(err, errcode.DriverConfigInvalid, "zones: %q is not a zone name", z).With(errcode.DetailField, "/zones")
		}
		zones[name] = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for z := range zones {
		zones[z] = m.zones[z] // a zone kept across reconfiguration keeps its records
	}
	m.zones = zones
	return nil
}

// lockZone takes the lock and returns zone's canonical name; on success the caller unlocks.
func (m *memory) lockZone(zone string) (string, error) {
	z, err := dns.NormalizeZone(zone)
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	if m.zones == nil {
		m.mu.Unlock()
		return "", errcode.New(errcode.DriverNotConfigured, "no zones configured")
	}
	if _, ok := m.zones[z]; !ok {
		m.mu.Unlock()
		return "", dns.NotFound(zone)
	}
	return z, nil
}

func (m *memory) ListZones(context.Context) ([]dns.Zone, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.zones == nil {
		return nil, errcode.New(errcode.DriverNotConfigured, "no zones configured")
	}
	var out []dns.Zone
	for z := range m.zones {
		out = append(out, dns.Zone{Name: z})
	}
	slices.SortFunc(out, func(a, b dns.Zone) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return out, nil
}

func (m *memory) GetRecords(_ context.Context, zone string) ([]dns.Record, error) {
	z, err := m.lockZone(zone)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return slices.Clone(m.zones[z]), nil
}

// add stores r with an id and a TTL; the caller holds the lock.
func (m *memory) add(z string, r dns.Record) dns.Record {
	m.seq++
	r.ID = strconv.Itoa(m.seq)
	if r.TTL == 0 {
		r.TTL = defaultTTL
	}
	m.zones[z] = append(m.zones[z], r)
	return r
}

func (m *memory) AppendRecords(_ context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	in, err := dns.NormalizeAll(recs) // refuse bad input before touching anything
	if err != nil {
		return nil, err
	}
	z, err := m.lockZone(zone)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var added []dns.Record
	for _, r := range dns.PlanAppend(m.zones[z], in) {
		added = append(added, m.add(z, r))
	}
	return added, nil
}

func (m *memory) SetRecords(_ context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	in, err := dns.NormalizeAll(recs)
	if err != nil {
		return nil, err
	}
	z, err := m.lockZone(zone)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	del, add := dns.PlanSet(m.zones[z], in)
	m.zones[z] = slices.DeleteFunc(m.zones[z], func(r dns.Record) bool { return slices.Contains(del, r) })
	for _, r := range add {
		m.add(z, r)
	}
	var out []dns.Record
	for _, r := range m.zones[z] {
		if slices.ContainsFunc(in, func(w dns.Record) bool { return dns.Same(w, r) }) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *memory) DeleteRecords(_ context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	var patterns []dns.Record
	for _, r := range recs {
		p, err := dns.NormalizePattern(r)
		if err != nil {
			return nil, err
		}
		patterns = append(patterns, p)
	}
	z, err := m.lockZone(zone)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	del := dns.PlanDelete(m.zones[z], patterns)
	m.zones[z] = slices.DeleteFunc(m.zones[z], func(r dns.Record) bool { return slices.Contains(del, r) })
	return del, nil
}

var _ dns.Driver = (*memory)(nil)

func main() { dns.Serve(&memory{}) }
