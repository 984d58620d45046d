package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"

	"sync"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// version is the driver's own version; manifest.json says the same.
const version = "1.0.0"

// defaultTTL is the TTL of a record written without one.
const defaultTTL = time.Hour

// Settings are an account's settings; the credential is the TSIG secret (base64).
type Settings struct {
	// Server is the primary's address, host:port.
	Server string `json:"server"`
	// Zones are the zones this account may change. RFC 2136 cannot list a server's zones, and a TSIG
	// key may reach more zones than the account should: the list is the account's scope.
	Zones []string `json:"zones"`
	// KeyName is the TSIG key's name ("lexicon." or "lexicon").
	KeyName string `json:"key_name"`
	// Algorithm is the TSIG algorithm: hmac-sha256 (default), hmac-sha384 or hmac-sha512.
	Algorithm string `json:"algorithm,omitempty"`
	// TimeoutSeconds bounds each exchange with the server (default 10).
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["server", "zones", "key_name"],
  "properties": {
    "server": {"type": "string", "minLength": 3, "maxLength": 300},
    "zones": {"type": "array", "minItems": 1, "maxItems": 1000, "items": {"type": "string", "maxLength": 253}},
    "key_name": {"type": "string", "minLength": 1, "maxLength": 253},
    "algorithm": {"enum": ["hmac-sha256", "hmac-sha384", "hmac-sha512"]},
    "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 120}
  }
}`

var algorithms = map[string]string{
	"":            mdns.HmacSHA256,
	"hmac-sha256": mdns.HmacSHA256,
	"hmac-sha384": mdns.HmacSHA384,
	"hmac-sha512": mdns.HmacSHA512,
}

// account is a validated configuration.
type account struct {
	server  string
	zones   []string // canonical
	keyName string   // canonical FQDN
	alg     string
	secret  driver.Secret
	timeout time.Duration
}

// Driver is the RFC 2136 driver.
type Driver struct {
	mu  sync.RWMutex
	acc *account
}

func (d *Driver) Info(context.Context) (driver.Info, error) {
	return driver.Info{Kind: driver.KindDNS, Name: "rfc2136", Version: version, APIVersions: dns.APIVersions()}, nil
}

func (d *Driver) ConfigSchema(context.Context) (json.RawMessage, error) {
	return json.RawMessage(schema), nil
}

func configInvalid(field, format string, args ...any) error {
	return errcode.New(errcode.DriverConfigInvalid, "%s: "+format, append([]any{field}, args...)...).With(errcode.DetailField, "/"+field)
}

func (d *Driver) SetConfig(_ context.Context, cfg driver.Config) error {
	var s Settings
	if err := driver.DecodeSettings(cfg.Settings, &s); err != nil {
		return err
	}
	acc := &account{secret: cfg.Credential, timeout: 10 * time.Second}
	host, port, err := net.SplitHostPort(s.Server)
	if err != nil || host == "" || port == "" {
		return configInvalid("server", "%q is not host:port", s.Server)
	}
	acc.server = s.Server
	if len(s.Zones) == 0 {
		return configInvalid("zones", "at least one zone")
	}
	for _, z := range s.Zones {
		n, err := dns.NormalizeZone(z)
		if err != nil {
			return configInvalid("zones", "%q is not a zone name", z)
		}
		acc.zones = append(acc.zones, n)
	}
	if _, ok := mdns.IsDomainName(s.KeyName); !ok || s.KeyName == "" {
		return configInvalid("key_name", "%q is not a key name", s.KeyName)
	}
	acc.keyName = mdns.CanonicalName(s.KeyName)
	alg, ok := algorithms[s.Algorithm]
	if !ok {
		return configInvalid("algorithm", "%q is not a supported TSIG algorithm", s.Algorithm)
	}
	acc.alg = alg
	if s.TimeoutSeconds > 0 {
		acc.timeout = time.Duration(s.TimeoutSeconds) * time.Second
	}
	if cfg.Credential.IsZero() {
		return errcode.New(errcode.DriverConfigInvalid, "the credential (the TSIG secret) is empty").With(errcode.DetailField, "credential")
	}
	if _, err := base64.StdEncoding.DecodeString(cfg.Credential.Reveal()); err != nil {
		return errcode.New(errcode.DriverConfigInvalid, "the credential is not a base64 TSIG secret").With(errcode.DetailField, "credential")
	}
	d.mu.Lock()
	d.acc = acc
	d.mu.Unlock()
	return nil
}

// account returns the configuration, or driver.not_configured.
func (d *Driver) account() (*account, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.acc == nil {
		return nil, errcode.New(errcode.DriverNotConfigured, "the driver has no account settings yet")
	}
	return d.acc, nil
}

// zone checks that zone is one the account may change and returns its canonical name.
func (a *account) zone(zone string) (string, error) {
	z, err := dns.NormalizeZone(zone)
	if err != nil {
		return "", err
	}
	if !slices.Contains(a.zones, z) {
		return "", dns.NotFound(zone)
	}
	return z, nil
}

func (d *Driver) ListZones(context.Context) ([]dns.Zone, error) {
	a, err := d.account()
	if err != nil {
		return nil, err
	}
	var out []dns.Zone
	for _, z := range a.zones {
		out = append(out, dns.Zone{Name: z})
	}
	return out, nil
}

func (d *Driver) GetRecords(ctx context.Context, zone string) ([]dns.Record, error) {
	a, err := d.account()
	if err != nil {
		return nil, err
	}
	z, err := a.zone(zone)
	if err != nil {
		return nil, err
	}
	return a.read(ctx, z)
}

func (d *Driver) AppendRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	in, a, z, err := d.prepare(zone, recs)
	if err != nil {
		return nil, err
	}
	existing, err := a.read(ctx, z)
	if err != nil {
		return nil, err
	}
	add := withTTL(dns.PlanAppend(existing, in))
	if len(add) == 0 {
		return nil, nil
	}
	m := a.update(z)
	m.Insert(toRRs(add, z))
	if err := a.send(ctx, m); err != nil {
		return nil, err
	}
	return add, nil
}

func (d *Driver) SetRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	in, a, z, err := d.prepare(zone, recs)
	if err != nil {
		return nil, err
	}
	if len(in) == 0 {
		return nil, nil
	}
	in = withTTL(in)
	// One message: for each name and type, drop the RRset, then add the records. The server applies
	// it atomically, so readers never see the name and type empty.
	m := a.update(z)
	type key struct{ name, typ string }
	seen := map[key]bool{}
	for _, r := range in {
		k := key{r.Name, r.Type}
		if seen[k] {
			continue
		}
		seen[k] = true
		m.RemoveRRset([]mdns.RR{&mdns.ANY{Hdr: mdns.RR_Header{Name: dns.Absolute(r.Name, z), Rrtype: mdns.StringToType[r.Type], Class: mdns.ClassANY}}})
	}
	var uniq []dns.Record
	for _, r := range in {
		if !slices.ContainsFunc(uniq, func(u dns.Record) bool { return dns.Same(u, r) }) {
			uniq = append(uniq, r)
		}
	}
	m.Insert(toRRs(uniq, z))
	if err := a.send(ctx, m); err != nil {
		return nil, err
	}
	return uniq, nil
}

func (d *Driver) DeleteRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	a, err := d.account()
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
	z, err := a.zone(zone)
	if err != nil {
		return nil, err
	}
	existing, err := a.read(ctx, z)
	if err != nil {
		return nil, err
	}
	del := dns.PlanDelete(existing, patterns)
	if len(del) == 0 {
		return nil, nil
	}
	m := a.update(z)
	m.Remove(toRRs(del, z))
	if err := a.send(ctx, m); err != nil {
		return nil, err
	}
	return del, nil
}

// prepare normalizes recs (refusing bad input before any exchange) and checks the zone.
func (d *Driver) prepare(zone string, recs []dns.Record) ([]dns.Record, *account, string, error) {
	a, err := d.account()
	if err != nil {
		return nil, nil, "", err
	}
	in, err := dns.NormalizeAll(recs)
	if err != nil {
		return nil, nil, "", err
	}
	z, err := a.zone(zone)
	if err != nil {
		return nil, nil, "", err
	}
	return in, a, z, nil
}

func withTTL(recs []dns.Record) []dns.Record {
	out := slices.Clone(recs)
	for i := range out {
		if out[i].TTL == 0 {
			out[i].TTL = defaultTTL
		}
	}
	return out
}

// update starts a TSIG-signed UPDATE of zone.
func (a *account) update(zone string) *mdns.Msg {
	m := new(mdns.Msg)
	m.SetUpdate(zone)
	return m
}

func (a *account) client() *mdns.Client {
	return &mdns.Client{Net: "tcp", Timeout: a.timeout, TsigSecret: map[string]string{a.keyName: a.secret.Reveal()}}
}

// exchange sends m signed and returns the verified answer, with the failure coded.
func (a *account) exchange(ctx context.Context, m *mdns.Msg) (*mdns.Msg, error) {
	m.SetTsig(a.keyName, a.alg, 300, time.Now().Unix())
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	r, _, err := a.client().ExchangeContext(ctx, m, a.server)
	if err != nil {
		return nil, exchangeError(a.server, err)
	}
	if t := r.IsTsig(); t != nil && t.Error != mdns.RcodeSuccess {
		return nil, errcode.New(errcode.DNSAuth, "server %s refused the TSIG key: %s", a.server, mdns.RcodeToString[int(t.Error)])
	}
	return r, nil
}

func exchangeError(server string, err error) error {
	switch {
	case errors.Is(err, mdns.ErrSig), errors.Is(err, mdns.ErrAuth), errors.Is(err, mdns.ErrTime), errors.Is(err, mdns.ErrKeyAlg), errors.Is(err, mdns.ErrSecret):
		return errcode.Wrap(err, errcode.DNSAuth, "TSIG failed with server %s", server)
	}
	return errcode.Wrap(err, errcode.DNSUnavailable, "server %s did not answer", server)
}

// rcodeError codes a server's refusal of a query or update of zone.
func rcodeError(server, zone string, rcode int) error {
	name := mdns.RcodeToString[rcode]
	switch rcode {
	case mdns.RcodeNotAuth:
		return errcode.New(errcode.DNSNotFound, "server %s is not authoritative for %s (%s)", server, zone, name).With(errcode.DetailZone, zone)
	case mdns.RcodeRefused:
		return errcode.New(errcode.DNSAuth, "server %s refused the request for %s: the key may not change it (%s)", server, zone, name)
	case mdns.RcodeNotZone, mdns.RcodeFormatError:
		return errcode.New(errcode.DNSInvalid, "server %s refused the request for %s as malformed (%s)", server, zone, name)
	case mdns.RcodeYXRrset, mdns.RcodeNXRrset, mdns.RcodeYXDomain, mdns.RcodeNameError:
		return errcode.New(errcode.DNSConflict, "server %s refused the change to %s (%s)", server, zone, name)
	case mdns.RcodeNotImplemented:
		return errcode.New(errcode.DNSUnsupported, "server %s does not implement the request (%s)", server, name)
	}
	return errcode.New(errcode.DNSUnavailable, "server %s failed for %s (%s)", server, zone, name)
}

// send sends an UPDATE and codes its outcome.
func (a *account) send(ctx context.Context, m *mdns.Msg) error {
	r, err := a.exchange(ctx, m)
	if err != nil {
		return err
	}
	if r.Rcode != mdns.RcodeSuccess {
		return rcodeError(a.server, m.Question[0].Name, r.Rcode)
	}
	return nil
}

// read returns zone's records by AXFR, after a signed SOA query that tells a zone the server does not
// serve (dns.not_found) and a key it refuses (dns.auth) from each other.
func (a *account) read(ctx context.Context, zone string) ([]dns.Record, error) {
	q := new(mdns.Msg)
	q.SetQuestion(zone, mdns.TypeSOA)
	r, err := a.exchange(ctx, q)
	if err != nil {
		return nil, err
	}
	if r.Rcode != mdns.RcodeSuccess || !r.Authoritative {
		if r.Rcode == mdns.RcodeSuccess || r.Rcode == mdns.RcodeRefused {
			return nil, errcode.New(errcode.DNSNotFound, "server %s does not serve zone %s", a.server, zone).With(errcode.DetailZone, zone)
		}
		return nil, rcodeError(a.server, zone, r.Rcode)
	}

	x := new(mdns.Msg)
	x.SetAxfr(zone)
	x.SetTsig(a.keyName, a.alg, 300, time.Now().Unix())
	deadline := a.timeout
	if dl, ok := ctx.Deadline(); ok {
		deadline = min(deadline, time.Until(dl))
	}
	t := &mdns.Transfer{DialTimeout: deadline, ReadTimeout: deadline, WriteTimeout: deadline,
		TsigSecret: map[string]string{a.keyName: a.secret.Reveal()}}
	envs, err := t.In(x, a.server)
	if err != nil {
		return nil, exchangeError(a.server, err)
	}
	var out []dns.Record
	for env := range envs {
		if env.Error != nil {
			var rcode int
			if _, serr := fmt.Sscanf(env.Error.Error(), "dns: bad xfr rcode: %d", &rcode); serr == nil {
				return nil, rcodeError(a.server, zone, rcode)
			}
			return nil, exchangeError(a.server, env.Error)
		}
		for _, rr := range env.RR {
			if rec, ok := fromRR(rr, zone); ok && !slices.ContainsFunc(out, func(o dns.Record) bool { return dns.Same(o, rec) }) {
				out = append(out, rec)
			}
		}
	}
	return out, nil
}

var _ dns.Driver = (*Driver)(nil)
