package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/driver/drivertest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const token = "cf-token-5b7d0e2a9f314c68"

func TestMain(m *testing.M) {
	drivertest.Main(m, drivertest.Drivers{DNS: func() dns.Driver { return &Driver{} }})
}

func config(endpoint, tok string) driver.Config {
	s, _ := json.Marshal(Settings{Endpoint: endpoint})
	return driver.Config{Settings: s, Credential: driver.NewSecret(tok)}
}

func configured(t *testing.T, cfg driver.Config) *Driver {
	t.Helper()
	d := &Driver{}
	if err := d.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestConformance(t *testing.T) {
	_, url := newFake(t, token, "example.com", "example.org")
	drivertest.RunDNS(t, func() dns.Driver { return &Driver{} }, config(url, token), drivertest.DNSOptions{Zone: "example.com"})
}

func TestZonesArePaged(t *testing.T) {
	var zones []string
	for i := range 8 {
		zones = append(zones, "zone"+string(rune('a'+i))+".example")
	}
	_, url := newFake(t, token, zones...)
	got, err := configured(t, config(url, token)).ListZones(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(zones) {
		t.Errorf("ListZones over pages of 3 returned %d zones, want %d: %v", len(got), len(zones), got)
	}
}

func TestRateLimit(t *testing.T) {
	f, url := newFake(t, token, "example.com")
	d := configured(t, config(url, token))
	ctx := context.Background()

	f.mu.Lock()
	f.rateLimit = 2 // fewer 429s than the driver tries: it waits them out
	f.mu.Unlock()
	if _, err := d.ListZones(ctx); err != nil {
		t.Fatalf("ListZones after two 429s: %v", err)
	}

	f.mu.Lock()
	f.rateLimit = 1000
	f.mu.Unlock()
	_, err := d.GetRecords(ctx, "example.org")
	testkit.WantCode(t, err, errcode.DNSRateLimited)
}

func TestBadToken(t *testing.T) {
	_, url := newFake(t, token, "example.com")
	_, err := configured(t, config(url, "cf-token-wrong-00000000")).ListZones(context.Background())
	testkit.WantCode(t, err, errcode.DNSAuth)
}

// A record the provider refuses part-way through a call: the records the call had created are deleted
// again, so the zone is as it was.
func TestRefusedCreateIsUndone(t *testing.T) {
	_, url := newFake(t, token, "example.com")
	d := configured(t, config(url, token))
	ctx := context.Background()
	if _, err := d.AppendRecords(ctx, "example.com", []dns.Record{{Type: "A", Name: "taken", Value: "192.0.2.1"}}); err != nil {
		t.Fatal(err)
	}
	_, err := d.AppendRecords(ctx, "example.com", []dns.Record{
		{Type: "TXT", Name: "fresh", Value: "created, then undone"},
		{Type: "CNAME", Name: "taken", Value: "elsewhere.example.net."}, // Cloudflare refuses: 81053
	})
	testkit.WantCode(t, err, errcode.DNSConflict)
	recs, err := d.GetRecords(ctx, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Name == "fresh" {
			t.Errorf("the refused call left %+v behind", r)
		}
	}
}

// A provider answer quoting the token reaches the host scrubbed.
func TestProviderEchoIsScrubbedOverTheWire(t *testing.T) {
	f, url := newFake(t, token, "example.com")
	f.mu.Lock()
	f.echoToken = true
	f.mu.Unlock()
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{dns.PluginName: &dns.Plugin{Impl: &Driver{}}})
	defer func() { server.Stop(); _ = client.Close() }()
	raw, err := client.Dispense(dns.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	d := raw.(*dns.Client)
	ctx := context.Background()
	if err := d.SetConfig(ctx, config(url, token)); err != nil {
		t.Fatal(err)
	}
	_, err = d.AppendRecords(ctx, "example.com", []dns.Record{{Type: "A", Name: "x", Value: "192.0.2.1"}})
	testkit.WantCode(t, err, errcode.DNSInvalid)
	if strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), driver.Redacted) {
		t.Errorf("the error reached the host as %q", err)
	}
}

func TestConfigRefusals(t *testing.T) {
	for _, endpoint := range []string{"http://api.cloudflare.com/client/v4", "ftp://x/", "https://u:p@x/"} {
		err := (&Driver{}).SetConfig(context.Background(), config(endpoint, token))
		testkit.WantCode(t, err, errcode.DriverConfigInvalid)
	}
	testkit.WantCode(t, (&Driver{}).SetConfig(context.Background(), config("", "")), errcode.DriverConfigInvalid)
	_, err := (&Driver{}).ListZones(context.Background())
	testkit.WantCode(t, err, errcode.DriverNotConfigured)
}

func TestManifest(t *testing.T) {
	data, err := os.ReadFile("manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(data)
	if err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	info, _ := (&Driver{}).Info(context.Background())
	if m.Kind != manifest.KindDriver || string(m.Class) != string(info.Kind) || m.Name != info.Name || m.Version != info.Version || m.Module.File != "lexicon-driver-dns-cloudflare" {
		t.Errorf("manifest %+v does not match the driver %+v", m, info)
	}
}
