package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/driver/drivertest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func TestMain(m *testing.M) {
	drivertest.Main(m, drivertest.Drivers{DNS: func() dns.Driver { return &Driver{} }})
}

func config(t *testing.T, b *bind, secret string, zones ...string) driver.Config {
	t.Helper()
	s, err := json.Marshal(Settings{Server: b.addr, Zones: zones, KeyName: keyName, TimeoutSeconds: 5})
	if err != nil {
		t.Fatal(err)
	}
	return driver.Config{Settings: s, Credential: driver.NewSecret(secret)}
}

func TestConformanceAgainstBIND(t *testing.T) {
	b := startBIND(t, "example.com")
	drivertest.RunDNS(t, func() dns.Driver { return &Driver{} }, config(t, b, b.secret, "example.com"), drivertest.DNSOptions{Zone: "example.com"})
}

func configured(t *testing.T, cfg driver.Config) *Driver {
	t.Helper()
	d := &Driver{}
	if err := d.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestServerFaults(t *testing.T) {
	b := startBIND(t, "example.com")
	ctx := context.Background()
	rec := []dns.Record{{Type: "A", Name: "x", Value: "192.0.2.1"}}

	t.Run("unknown key", func(t *testing.T) {
		d := configured(t, config(t, b, newSecret(t), "example.com"))
		_, err := d.GetRecords(ctx, "example.com")
		testkit.WantCode(t, err, errcode.DNSAuth)
		_, err = d.AppendRecords(ctx, "example.com", rec)
		testkit.WantCode(t, err, errcode.DNSAuth)
	})
	t.Run("zone in the account the server does not serve", func(t *testing.T) {
		d := configured(t, config(t, b, b.secret, "example.com", "example.net"))
		_, err := d.GetRecords(ctx, "example.net")
		testkit.WantCode(t, err, errcode.DNSNotFound)
		_, err = d.AppendRecords(ctx, "example.net", rec)
		testkit.WantCode(t, err, errcode.DNSNotFound)
	})
	t.Run("zone outside the account", func(t *testing.T) {
		d := configured(t, config(t, b, b.secret, "example.net"))
		_, err := d.GetRecords(ctx, "example.com")
		testkit.WantCode(t, err, errcode.DNSNotFound)
	})
	t.Run("server down", func(t *testing.T) {
		cfg := config(t, b, b.secret, "example.com")
		var s Settings
		_ = json.Unmarshal(cfg.Settings, &s)
		s.Server = "127.0.0.1:1"
		cfg.Settings, _ = json.Marshal(s)
		_, err := configured(t, cfg).GetRecords(ctx, "example.com")
		testkit.WantCode(t, err, errcode.DNSUnavailable)
	})
	t.Run("not configured", func(t *testing.T) {
		_, err := (&Driver{}).GetRecords(ctx, "example.com")
		testkit.WantCode(t, err, errcode.DriverNotConfigured)
	})
}

func TestConfigRefusals(t *testing.T) {
	good := Settings{Server: "127.0.0.1:53", Zones: []string{"example.com"}, KeyName: "k."}
	cases := map[string]func(*Settings){
		"/server":    func(s *Settings) { s.Server = "no-port" },
		"/zones":     func(s *Settings) { s.Zones = []string{"bad zone"} },
		"/key_name":  func(s *Settings) { s.KeyName = "" },
		"/algorithm": func(s *Settings) { s.Algorithm = "hmac-md5" },
	}
	for field, edit := range cases {
		s := good
		edit(&s)
		raw, _ := json.Marshal(s)
		err := (&Driver{}).SetConfig(context.Background(), driver.Config{Settings: raw, Credential: driver.NewSecret("c2VjcmV0c2VjcmV0")})
		var e *errcode.Error
		if !errors.As(err, &e) || e.Code != errcode.DriverConfigInvalid || e.Details["field"] != field {
			t.Errorf("bad %s: got %v", field, err)
		}
	}
	raw, _ := json.Marshal(good)
	err := (&Driver{}).SetConfig(context.Background(), driver.Config{Settings: raw, Credential: driver.NewSecret("not base64!")})
	testkit.WantCode(t, err, errcode.DriverConfigInvalid)
	if err != nil && strings.Contains(err.Error(), "not base64!") {
		t.Errorf("the refusal quotes the credential: %v", err)
	}
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
	if m.Kind != manifest.KindDriver || string(m.Class) != string(info.Kind) || m.Name != info.Name || m.Version != info.Version || m.Module.File != "lexicon-driver-dns-rfc2136" {
		t.Errorf("manifest %+v does not match the driver %+v", m, info)
	}
}
