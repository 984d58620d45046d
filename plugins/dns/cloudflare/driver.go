package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// version is the driver's own version; manifest.json says the same.
const version = "1.0.0"

// DefaultEndpoint is Cloudflare's API.
const DefaultEndpoint = "https://api.cloudflare.com/client/v4"

// Settings are an account's settings; the credential is the API token.
type Settings struct {
	// Endpoint overrides the API's base URL (https, or http on loopback for a test server).
	Endpoint string `json:"endpoint,omitempty"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "endpoint": {"type": "string", "maxLength": 300}
  }
}`

// Driver is the Cloudflare driver.
type Driver struct {
	mu    sync.Mutex
	api   *api
	zones map[string]string // canonical zone name -> zone id
}

func (d *Driver) Info(context.Context) (driver.Info, error) {
	return driver.Info{Kind: driver.KindDNS, Name: "cloudflare", Version: version, APIVersions: dns.APIVersions()}, nil
}

func (d *Driver) ConfigSchema(context.Context) (json.RawMessage, error) {
	return json.RawMessage(schema), nil
}

func (d *Driver) SetConfig(_ context.Context, cfg driver.Config) error {
	var s Settings
	if err := driver.DecodeSettings(cfg.Settings, &s); err != nil {
		return err
	}
	if s.Endpoint == "" {
		s.Endpoint = DefaultEndpoint
	}
	base, err := driver.CheckEndpoint("endpoint", s.Endpoint)
	if err != nil {
		return err
	}
	if cfg.Credential.IsZero() {
		return errcode.New(errcode.DriverConfigInvalid, "the credential (an API token) is empty").With(errcode.DetailField, "credential")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.api = &api{base: base, token: cfg.Credential, http: &http.Client{Timeout: 60 * time.Second}}
	d.zones = map[string]string{}
	return nil
}

func (d *Driver) client() (*api, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.api == nil {
		return nil, errcode.New(errcode.DriverNotConfigured, "the driver has no account settings yet")
	}
	return d.api, nil
}

func (d *Driver) ListZones(ctx context.Context) ([]dns.Zone, error) {
	a, err := d.client()
	if err != nil {
		return nil, err
	}
	var out []dns.Zone
	err = a.pages(ctx, "/zones", nil, zonesPage, func(raw json.RawMessage) error {
		var zs []zone
		if err := json.Unmarshal(raw, &zs); err != nil {
			return errcode.Wrap(err, errcode.DNSUnavailable, "Cloudflare's zone list is malformed")
		}
		for _, z := range zs {
			if n, err := dns.NormalizeZone(z.Name); err == nil {
				out = append(out, dns.Zone{Name: n})
				d.mu.Lock()
				d.zones[n] = z.ID
				d.mu.Unlock()
			}
		}
		return nil
	})
	return out, err
}

// zoneID resolves a zone name to Cloudflare's id (dns.not_found when the token cannot see it).
func (d *Driver) zoneID(ctx context.Context, a *api, name string) (string, string, error) {
	z, err := dns.NormalizeZone(name)
	if err != nil {
		return "", "", err
	}
	d.mu.Lock()
	id, ok := d.zones[z]
	d.mu.Unlock()
	if ok {
		return z, id, nil
	}
	env, err := a.do(ctx, http.MethodGet, "/zones", url.Values{"name": {strings.TrimSuffix(z, ".")}}, nil)
	if err != nil {
		return "", "", err
	}
	var zs []zone
	if err := json.Unmarshal(env.Result, &zs); err != nil {
		return "", "", errcode.Wrap(err, errcode.DNSUnavailable, "Cloudflare's zone list is malformed")
	}
	for _, cz := range zs {
		if n, err := dns.NormalizeZone(cz.Name); err == nil && n == z {
			d.mu.Lock()
			d.zones[z] = cz.ID
			d.mu.Unlock()
			return z, cz.ID, nil
		}
	}
	return "", "", dns.NotFound(name)
}

func (d *Driver) GetRecords(ctx context.Context, zone string) ([]dns.Record, error) {
	a, err := d.client()
	if err != nil {
		return nil, err
	}
	z, id, err := d.zoneID(ctx, a, zone)
	if err != nil {
		return nil, err
	}
	return d.read(ctx, a, z, id)
}

// read returns every record of the zone the contract carries, in canonical form with its id.
func (d *Driver) read(ctx context.Context, a *api, z, id string) ([]dns.Record, error) {
	var out []dns.Record
	err := a.pages(ctx, "/zones/"+url.PathEscape(id)+"/dns_records", nil, defaultRecordsPage, func(raw json.RawMessage) error {
		var rs []record
		if err := json.Unmarshal(raw, &rs); err != nil {
			return errcode.Wrap(err, errcode.DNSUnavailable, "Cloudflare's record list is malformed")
		}
		for _, r := range rs {
			if rec, ok := fromCloudflare(r, z); ok {
				out = append(out, rec)
			}
		}
		return nil
	})
	return out, err
}

// fromCloudflare turns a Cloudflare record into a canonical one; ok is false for what the contract does
// not carry.
func fromCloudflare(r record, zone string) (dns.Record, bool) {
	name, ok := dns.Relative(r.Name, zone)
	if !ok {
		return dns.Record{}, false
	}
	rec := dns.Record{ID: r.ID, Type: r.Type, Name: name, Value: r.Content}
	if r.TTL > 1 { // 1 means "automatic": the provider's default
		rec.TTL = time.Duration(r.TTL) * time.Second
	}
	switch r.Type {
	case "MX":
		if r.Priority != nil {
			rec.Priority = *r.Priority
		}
	case "SRV":
		var s srvData
		if json.Unmarshal(r.Data, &s) == nil && s.Target != "" {
			rec.Priority, rec.Value = s.Priority, fmt.Sprintf("%d %d %s", s.Weight, s.Port, s.Target)
		} else if r.Priority != nil {
			rec.Priority = *r.Priority
		}
	case "CAA":
		var c caaData
		if json.Unmarshal(r.Data, &c) == nil && c.Tag != "" {
			rec.Value = fmt.Sprintf("%d %s %q", c.Flags, c.Tag, c.Value)
		}
	case "TXT":
		v, err := dns.UnquoteTXT(r.Content)
		if err != nil {
			return dns.Record{}, false
		}
		rec.Value = v
	}
	n, err := rec.Normalize()
	if err != nil {
		return dns.Record{}, false
	}
	n.ID = r.ID
	return n, true
}

// toCloudflare turns a canonical record into the body Cloudflare creates it from.
func toCloudflare(r dns.Record, zone string) record {
	out := record{Type: r.Type, Name: strings.TrimSuffix(dns.Absolute(r.Name, zone), "."), TTL: 1}
	if r.TTL > 0 {
		out.TTL = int(r.TTL / time.Second)
	}
	switch r.Type {
	case "A", "AAAA", "CNAME":
		out.Content = r.Value
		if r.Type == "CNAME" {
			out.Content = strings.TrimSuffix(r.Value, ".")
		}
		f := false
		out.Proxied = &f // DNS only: a proxied record answers with Cloudflare's addresses, not this value
	case "NS", "PTR":
		out.Content = strings.TrimSuffix(r.Value, ".")
	case "MX":
		p := r.Priority
		out.Content, out.Priority = strings.TrimSuffix(r.Value, "."), &p
	case "TXT":
		out.Content = dns.QuoteTXT(r.Value)
	case "SRV":
		var s srvData
		fmt.Sscanf(r.Value, "%d %d %s", &s.Weight, &s.Port, &s.Target)
		s.Priority, s.Target = r.Priority, strings.TrimSuffix(s.Target, ".")
		out.Data, _ = json.Marshal(s)
	case "CAA":
		var c caaData
		fmt.Sscanf(r.Value, "%d %s", &c.Flags, &c.Tag)
		c.Value = strings.Trim(r.Value[strings.Index(r.Value, `"`):], `"`)
		out.Data, _ = json.Marshal(c)
	}
	return out
}

// prepare normalizes recs before anything reaches Cloudflare, and resolves the zone.
func (d *Driver) prepare(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, *api, string, string, error) {
	a, err := d.client()
	if err != nil {
		return nil, nil, "", "", err
	}
	in, err := dns.NormalizeAll(recs)
	if err != nil {
		return nil, nil, "", "", err
	}
	z, id, err := d.zoneID(ctx, a, zone)
	if err != nil {
		return nil, nil, "", "", err
	}
	return in, a, z, id, nil
}

// create creates recs one by one; if one fails, the ones it made are deleted again, so that a refused
// call leaves the zone as it was.
func (d *Driver) create(ctx context.Context, a *api, z, id string, recs []dns.Record) ([]dns.Record, error) {
	var made []dns.Record
	for _, r := range recs {
		env, err := a.do(ctx, http.MethodPost, "/zones/"+url.PathEscape(id)+"/dns_records", nil, toCloudflare(r, z))
		if err != nil {
			if rbErr := d.remove(context.WithoutCancel(ctx), a, id, made); rbErr != nil {
				return nil, errcode.Wrap(err, errcode.Code(err), "%s; undoing the records already created failed too (%v): read the zone", err, rbErr)
			}
			return nil, err
		}
		var cr record
		if err := json.Unmarshal(env.Result, &cr); err != nil {
			return nil, errcode.Wrap(err, errcode.DNSUnavailable, "Cloudflare's answer to a create is malformed")
		}
		r.ID = cr.ID
		made = append(made, r)
	}
	return made, nil
}

// remove deletes records by id; one already gone counts as deleted.
func (d *Driver) remove(ctx context.Context, a *api, id string, recs []dns.Record) error {
	for _, r := range recs {
		_, err := a.do(ctx, http.MethodDelete, "/zones/"+url.PathEscape(id)+"/dns_records/"+url.PathEscape(r.ID), nil, nil)
		if err != nil && !errcode.Has(err, errcode.DNSNotFound) {
			return err
		}
	}
	return nil
}

func (d *Driver) AppendRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	in, a, z, id, err := d.prepare(ctx, zone, recs)
	if err != nil {
		return nil, err
	}
	existing, err := d.read(ctx, a, z, id)
	if err != nil {
		return nil, err
	}
	add := dns.PlanAppend(existing, in)
	if len(add) == 0 {
		return nil, nil
	}
	return d.create(ctx, a, z, id, add)
}

func (d *Driver) SetRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	in, a, z, id, err := d.prepare(ctx, zone, recs)
	if err != nil {
		return nil, err
	}
	existing, err := d.read(ctx, a, z, id)
	if err != nil {
		return nil, err
	}
	del, add := dns.PlanSet(existing, in)
	// A record that only changes its TTL is patched in place: creating its twin first would be refused
	// as identical.
	var create []dns.Record
	for _, r := range add {
		i := slices.IndexFunc(del, func(e dns.Record) bool { return dns.Same(e, r) })
		if i < 0 {
			create = append(create, r)
			continue
		}
		ttl := 1
		if r.TTL > 0 {
			ttl = int(r.TTL / time.Second)
		}
		if _, err := a.do(ctx, http.MethodPatch, "/zones/"+url.PathEscape(id)+"/dns_records/"+url.PathEscape(del[i].ID), nil, map[string]int{"ttl": ttl}); err != nil {
			return nil, err
		}
		del = slices.Delete(del, i, i+1)
	}
	// New records first, then the old ones go: the name never answers empty in between.
	if _, err := d.create(ctx, a, z, id, create); err != nil {
		return nil, err
	}
	if err := d.remove(ctx, a, id, del); err != nil {
		return nil, errcode.Wrap(err, errcode.Code(err), "the new records were created but old ones could not be deleted: read the zone")
	}
	now, err := d.read(ctx, a, z, id)
	if err != nil {
		return nil, err
	}
	var out []dns.Record
	for _, r := range now {
		if slices.ContainsFunc(in, func(w dns.Record) bool { return dns.Same(w, r) }) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (d *Driver) DeleteRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	a, err := d.client()
	if err != nil {
		return nil, err
	}
	if len(recs) > dns.MaxRecords {
		return nil, errcode.New(errcode.DNSInvalid, "at most %d records per call", dns.MaxRecords).With(errcode.DetailField, "records")
	}
	var patterns []dns.Record
	for _, r := range recs {
		p, err := dns.NormalizePattern(r)
		if err != nil {
			return nil, err
		}
		patterns = append(patterns, p)
	}
	z, id, err := d.zoneID(ctx, a, zone)
	if err != nil {
		return nil, err
	}
	existing, err := d.read(ctx, a, z, id)
	if err != nil {
		return nil, err
	}
	del := dns.PlanDelete(existing, patterns)
	if err := d.remove(ctx, a, id, del); err != nil {
		return nil, err
	}
	return del, nil
}

var _ dns.Driver = (*Driver)(nil)
