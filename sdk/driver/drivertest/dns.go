package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// DNSOptions say where the suite may write.
type DNSOptions struct {
	// Zone is a zone the account serves and the suite may add records to (required). The suite only
	// touches names under a random "lxt-" label and removes them when done.
	Zone string
	// MissingZone is a zone the account does not serve (default "lexicon-no-such-zone.invalid.").
	MissingZone string
}

// testTTL is the TTL of every record the suite writes; every provider accepts five minutes.
const testTTL = 300 * time.Second

// RunDNS runs the DNS conformance suite three ways: on a driver from newDriver in this process, over
// gRPC in this process (go-plugin's TestPluginGRPCConn), and over a driver subprocess of this test
// binary (which needs drivertest.Main in TestMain). Each way configures its own driver with cfg.
func RunDNS(t *testing.T, newDriver func() dns.Driver, cfg driver.Config, opts DNSOptions) {
	t.Helper()
	if opts.Zone == "" {
		t.Fatal("drivertest: DNSOptions needs Zone")
	}
	t.Run("in-process", func(t *testing.T) { runDNS(t, newDriver(), cfg, opts) })
	t.Run("grpc", func(t *testing.T) {
		d := overGRPC(t, dns.PluginName, &dns.Plugin{Impl: newDriver()}).(*dns.Client)
		runDNS(t, d, cfg, opts)
	})
	t.Run("process", func(t *testing.T) {
		if registered.DNS == nil {
			t.Fatal("drivertest: call drivertest.Main(m, drivertest.Drivers{DNS: ...}) from TestMain so the suite can run the driver as a subprocess")
		}
		d := overProcess(t, driver.KindDNS, dns.VersionedPlugins(nil)).(*dns.Client)
		runDNS(t, d, cfg, opts)
	})
}

// RunDNSOn runs the DNS conformance suite once, against d as given (a host's proxy of a running driver,
// say). d must not be configured yet: the suite configures it with cfg.
func RunDNSOn(t *testing.T, d dns.Driver, cfg driver.Config, opts DNSOptions) {
	t.Helper()
	if opts.Zone == "" {
		t.Fatal("drivertest: DNSOptions needs Zone")
	}
	runDNS(t, d, cfg, opts)
}

type dnsSuite struct {
	d    dns.Driver
	zone string
	opts DNSOptions
	run  string // a label unique to this run; every name the suite writes ends in it
}

func runDNS(t *testing.T, d dns.Driver, cfg driver.Config, opts DNSOptions) {
	if opts.MissingZone == "" {
		opts.MissingZone = "lexicon-no-such-zone.invalid."
	}
	zone, err := dns.NormalizeZone(opts.Zone)
	if err != nil {
		t.Fatalf("DNSOptions.Zone: %v", err)
	}
	runBase(t, d, driver.KindDNS, cfg)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	s := &dnsSuite{d: d, zone: zone, opts: opts, run: "lxt-" + hex.EncodeToString(b)}
	t.Cleanup(func() { s.cleanup(t) })
	t.Run("zones", s.zones)
	t.Run("round_trip", s.roundTrip)
	t.Run("append_existing", s.appendExisting)
	t.Run("set_replaces_only_its_name_and_type", s.set)
	t.Run("delete", s.delete)
	t.Run("not_found", s.notFound)
	t.Run("bad_input", s.badInput)
}

// name returns a name under this run's label.
func (s *dnsSuite) name(prefix string) string { return prefix + "." + s.run }

// records returns the zone's records under this run's label.
func (s *dnsSuite) records(t *testing.T) []dns.Record {
	t.Helper()
	all, err := s.d.GetRecords(ctx(t), s.zone)
	if err != nil {
		t.Fatalf("GetRecords(%s): %v", s.zone, err)
	}
	var out []dns.Record
	for _, r := range all {
		if r.Name == s.run || strings.HasSuffix(r.Name, "."+s.run) {
			out = append(out, r)
		}
	}
	return out
}

func (s *dnsSuite) cleanup(t *testing.T) {
	all, err := s.d.GetRecords(context.Background(), s.zone)
	if err != nil {
		t.Logf("cleanup: GetRecords: %v", err)
		return
	}
	var mine []dns.Record
	for _, r := range all {
		if r.Name == s.run || strings.HasSuffix(r.Name, "."+s.run) {
			mine = append(mine, dns.Record{Name: r.Name, Type: r.Type})
		}
	}
	if len(mine) > 0 {
		if _, err := s.d.DeleteRecords(context.Background(), s.zone, mine); err != nil {
			t.Errorf("cleanup: DeleteRecords: %v", err)
		}
	}
}

// has reports how many of recs are the same record as want (name, type, value, priority).
func count(recs []dns.Record, want dns.Record) int {
	n := 0
	for _, r := range recs {
		if dns.Same(r, want) {
			n++
		}
	}
	return n
}

func (s *dnsSuite) zones(t *testing.T) {
	zones, err := s.d.ListZones(ctx(t))
	if err != nil {
		t.Fatalf("ListZones: %v", err)
	}
	if !slices.ContainsFunc(zones, func(z dns.Zone) bool { return z.Name == s.zone }) {
		t.Errorf("ListZones = %v: want %s among them (canonical, with the trailing dot)", zones, s.zone)
	}
}

// longTXT is over 255 bytes, so it travels as several character-strings.
func longTXT() string {
	var b strings.Builder
	b.WriteString("v=DKIM1; k=rsa; p=")
	for b.Len() < 600 {
		b.WriteString("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA")
	}
	return b.String()
}

func (s *dnsSuite) roundTrip(t *testing.T) {
	recs := []dns.Record{
		{Type: "A", Name: s.name("a"), Value: "192.0.2.10", TTL: testTTL},
		{Type: "AAAA", Name: s.name("aaaa"), Value: "2001:db8::10", TTL: testTTL},
		{Type: "CNAME", Name: s.name("cname"), Value: "target.example.net.", TTL: testTTL},
		{Type: "MX", Name: s.name("mx"), Value: "mail.example.net.", Priority: 10, TTL: testTTL},
		{Type: "TXT", Name: s.name("txt"), Value: "hello world", TTL: testTTL},
		{Type: "TXT", Name: s.name("quoted"), Value: `v=spf1 include:"quoted" back\slash; semi -all`, TTL: testTTL},
		{Type: "TXT", Name: s.name("long"), Value: longTXT(), TTL: testTTL},
		{Type: "SRV", Name: "_sip._tcp." + s.run, Value: "5 5060 sip.example.net.", Priority: 10, TTL: testTTL},
		{Type: "CAA", Name: s.name("caa"), Value: `0 issue "letsencrypt.org"`, TTL: testTTL},
	}
	added, err := s.d.AppendRecords(ctx(t), s.zone, recs)
	if err != nil {
		t.Fatalf("AppendRecords: %v", err)
	}
	if len(added) != len(recs) {
		t.Errorf("AppendRecords returned %d records, want the %d added", len(added), len(recs))
	}
	got := s.records(t)
	for _, want := range recs {
		want, _ = want.Normalize()
		i := slices.IndexFunc(got, func(r dns.Record) bool { return dns.Same(r, want) })
		if i < 0 {
			t.Errorf("record %s %s %.60q did not come back; the zone holds %v", want.Type, want.Name, want.Value, names(got))
			continue
		}
		if got[i].TTL != testTTL {
			t.Errorf("record %s %s came back with TTL %s, want %s", want.Type, want.Name, got[i].TTL, testTTL)
		}
	}
}

func names(recs []dns.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%s/%s=%.40q", r.Name, r.Type, r.Value))
	}
	return out
}

func (s *dnsSuite) appendExisting(t *testing.T) {
	rec := dns.Record{Type: "TXT", Name: s.name("dup"), Value: "only once", TTL: testTTL}
	if _, err := s.d.AppendRecords(ctx(t), s.zone, []dns.Record{rec}); err != nil {
		t.Fatalf("AppendRecords: %v", err)
	}
	again, err := s.d.AppendRecords(ctx(t), s.zone, []dns.Record{rec})
	if err != nil {
		t.Fatalf("AppendRecords of a record already there = %v: it must leave it and succeed", err)
	}
	if len(again) != 0 {
		t.Errorf("AppendRecords of a record already there returned %v: it added nothing", names(again))
	}
	if n := count(s.records(t), rec); n != 1 {
		t.Errorf("after appending a record twice the zone holds %d copies, want 1", n)
	}
	// A second value at the same name and type is added beside the first, never instead of it.
	other := dns.Record{Type: "TXT", Name: rec.Name, Value: "and another", TTL: testTTL}
	if _, err := s.d.AppendRecords(ctx(t), s.zone, []dns.Record{other}); err != nil {
		t.Fatalf("AppendRecords: %v", err)
	}
	got := s.records(t)
	if count(got, rec) != 1 || count(got, other) != 1 {
		t.Errorf("appending a second TXT value: zone holds %v, want both values", names(got))
	}
}

func (s *dnsSuite) set(t *testing.T) {
	n, m := s.name("set-n"), s.name("set-m")
	start := []dns.Record{
		{Type: "A", Name: n, Value: "192.0.2.11", TTL: testTTL},
		{Type: "A", Name: n, Value: "192.0.2.12", TTL: testTTL},
		{Type: "TXT", Name: n, Value: "keep me", TTL: testTTL},
		{Type: "A", Name: m, Value: "192.0.2.13", TTL: testTTL},
	}
	if _, err := s.d.AppendRecords(ctx(t), s.zone, start); err != nil {
		t.Fatalf("AppendRecords: %v", err)
	}
	want := dns.Record{Type: "A", Name: n, Value: "192.0.2.20", TTL: testTTL}
	set, err := s.d.SetRecords(ctx(t), s.zone, []dns.Record{want})
	if err != nil {
		t.Fatalf("SetRecords: %v", err)
	}
	if len(set) != 1 || !dns.Same(set[0], want) {
		t.Errorf("SetRecords returned %v, want the one record set", names(set))
	}
	got := s.records(t)
	var nA []dns.Record
	for _, r := range got {
		if r.Name == n && r.Type == "A" {
			nA = append(nA, r)
		}
	}
	if len(nA) != 1 || !dns.Same(nA[0], want) {
		t.Errorf("after SetRecords the A records of %s are %v, want only %s", n, names(nA), want.Value)
	}
	if count(got, start[2]) != 1 {
		t.Errorf("SetRecords of %s/A removed %s/TXT: it must replace only its own name and type", n, n)
	}
	if count(got, start[3]) != 1 {
		t.Errorf("SetRecords of %s/A removed %s/A: it must replace only its own name", n, m)
	}
	// Setting the same again changes nothing.
	if _, err := s.d.SetRecords(ctx(t), s.zone, []dns.Record{want}); err != nil {
		t.Fatalf("SetRecords again: %v", err)
	}
	if got := s.records(t); count(got, want) != 1 {
		t.Errorf("setting the same record twice left %d copies", count(got, want))
	}
}

func (s *dnsSuite) delete(t *testing.T) {
	n := s.name("del")
	recs := []dns.Record{
		{Type: "A", Name: n, Value: "192.0.2.30", TTL: testTTL},
		{Type: "A", Name: n, Value: "192.0.2.31", TTL: testTTL},
		{Type: "TXT", Name: n, Value: "stays", TTL: testTTL},
		{Type: "TXT", Name: n, Value: "goes by pattern", TTL: testTTL},
	}
	if _, err := s.d.AppendRecords(ctx(t), s.zone, recs); err != nil {
		t.Fatalf("AppendRecords: %v", err)
	}
	del, err := s.d.DeleteRecords(ctx(t), s.zone, []dns.Record{recs[0]})
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	if len(del) != 1 || !dns.Same(del[0], recs[0]) {
		t.Errorf("DeleteRecords returned %v, want the one record deleted", names(del))
	}
	got := s.records(t)
	if count(got, recs[0]) != 0 || count(got, recs[1]) != 1 {
		t.Errorf("after deleting one A record the zone holds %v", names(got))
	}
	again, err := s.d.DeleteRecords(ctx(t), s.zone, []dns.Record{recs[0]})
	if err != nil {
		t.Errorf("deleting a record that is gone = %v: it must succeed", err)
	}
	if len(again) != 0 {
		t.Errorf("deleting a record that is gone returned %v", names(again))
	}
	// A pattern without a value deletes every record of its name and type, and no other.
	del, err = s.d.DeleteRecords(ctx(t), s.zone, []dns.Record{{Name: n, Type: "A"}})
	if err != nil {
		t.Fatalf("DeleteRecords by name and type: %v", err)
	}
	if len(del) != 1 || !dns.Same(del[0], recs[1]) {
		t.Errorf("DeleteRecords by name and type returned %v, want %s", names(del), recs[1].Value)
	}
	if _, err := s.d.DeleteRecords(ctx(t), s.zone, []dns.Record{recs[3]}); err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	got = nil
	for _, r := range s.records(t) {
		if r.Name == n {
			got = append(got, r)
		}
	}
	if count(got, recs[2]) != 1 || len(got) != 1 {
		t.Errorf("after the deletes the zone holds %v, want only the TXT %q", names(got), recs[2].Value)
	}
}

func (s *dnsSuite) notFound(t *testing.T) {
	_, err := s.d.GetRecords(ctx(t), s.opts.MissingZone)
	testkit.CheckCode(t, err, errcode.DNSNotFound, "GetRecords of a zone the account does not serve")
	_, err = s.d.AppendRecords(ctx(t), s.opts.MissingZone, []dns.Record{{Type: "A", Name: "x", Value: "192.0.2.1", TTL: testTTL}})
	testkit.CheckCode(t, err, errcode.DNSNotFound, "AppendRecords to a zone the account does not serve")
}

func (s *dnsSuite) badInput(t *testing.T) {
	good := dns.Record{Type: "A", Name: s.name("bad"), Value: "192.0.2.40", TTL: testTTL}
	cases := []struct {
		name string
		rec  dns.Record
		code string
	}{
		{"malformed type", dns.Record{Type: "NOT A TYPE", Name: s.name("bad"), Value: "x"}, errcode.DNSInvalid},
		{"A that is no address", dns.Record{Type: "A", Name: s.name("bad"), Value: "not-an-ip"}, errcode.DNSInvalid},
		{"AAAA given an IPv4", dns.Record{Type: "AAAA", Name: s.name("bad"), Value: "192.0.2.1"}, errcode.DNSInvalid},
		{"name with spaces", dns.Record{Type: "A", Name: "bad name", Value: "192.0.2.1"}, errcode.DNSInvalid},
		{"absolute name", dns.Record{Type: "A", Name: "www." + s.zone, Value: "192.0.2.1"}, errcode.DNSInvalid},
		{"TXT with a control character", dns.Record{Type: "TXT", Name: s.name("bad"), Value: "a\x00b"}, errcode.DNSInvalid},
		{"TXT too long", dns.Record{Type: "TXT", Name: s.name("bad"), Value: strings.Repeat("x", dns.MaxTXTLen+1)}, errcode.DNSInvalid},
		{"negative TTL", dns.Record{Type: "A", Name: s.name("bad"), Value: "192.0.2.1", TTL: -time.Second}, errcode.DNSInvalid},
		{"priority on an A record", dns.Record{Type: "A", Name: s.name("bad"), Value: "192.0.2.1", Priority: 5}, errcode.DNSInvalid},
		{"unsupported type", dns.Record{Type: "HINFO", Name: s.name("bad"), Value: "x y"}, errcode.DNSUnsupported},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The good record rides along: a refused call must not have added it.
			_, err := s.d.AppendRecords(ctx(t), s.zone, []dns.Record{good, c.rec})
			testkit.CheckCode(t, err, c.code, "AppendRecords with "+c.name)
			_, err = s.d.SetRecords(ctx(t), s.zone, []dns.Record{good, c.rec})
			testkit.CheckCode(t, err, c.code, "SetRecords with "+c.name)
			if n := count(s.records(t), good); n != 0 {
				t.Errorf("a refused call left %s behind: nothing may be half-changed", good.Value)
			}
		})
	}
	_, err := s.d.GetRecords(ctx(t), "bad zone!")
	testkit.CheckCode(t, err, errcode.DNSInvalid, "GetRecords of a malformed zone name")
	_, err = s.d.DeleteRecords(ctx(t), s.zone, []dns.Record{{Type: "A", Name: "bad name"}})
	testkit.CheckCode(t, err, errcode.DNSInvalid, "DeleteRecords with a malformed name")
}
