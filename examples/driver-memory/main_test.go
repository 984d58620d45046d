package main

import (
	"context"
	"os"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/driver/drivertest"
)

func TestMain(m *testing.M) {
	drivertest.Main(m, drivertest.Drivers{DNS: func() dns.Driver { return &memory{} }})
}

func TestConformance(t *testing.T) {
	cfg := driver.Config{
		Settings:   []byte(`{"zones": ["example.com", "example.org"]}`),
		Credential: driver.NewSecret("memory-driver-credential"),
	}
	drivertest.RunDNS(t, func() dns.Driver { return &memory{} }, cfg, drivertest.DNSOptions{Zone: "example.com"})
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
	info, _ := (&memory{}).Info(context.Background())
	if m.Kind != manifest.KindDriver || string(m.Class) != string(info.Kind) || m.Name != info.Name || m.Version != info.Version {
		t.Errorf("manifest says %s %s %s@%s, the driver says %s %s@%s", m.Kind, m.Class, m.Name, m.Version, info.Kind, info.Name, info.Version)
	}
	if m.Module.File != "lexicon-driver-dns-memory" {
		t.Errorf("module file %q, want lexicon-driver-dns-memory", m.Module.File)
	}
}
