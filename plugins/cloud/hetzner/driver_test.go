package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plugins/cloud/hetzner/hetznerfake"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/drivertest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const token = "hcloud-token-3e1a77c09d2b4f6e"

// newDriver retries and polls quickly: the fake answers at once.
func newDriver() cloud.Driver { return &Driver{retryWait: time.Millisecond} }

func TestMain(m *testing.M) {
	drivertest.Main(m, drivertest.Drivers{Cloud: newDriver})
}

func config(endpoint, tok string) driver.Config {
	s, _ := json.Marshal(Settings{Project: "lexicon-test", Settings: cloud.Settings{Endpoint: endpoint}})
	return driver.Config{Settings: s, Credential: driver.NewSecret(tok)}
}

var opts = drivertest.CloudOptions{Region: "fsn1", Type: "cx22", Image: "debian-12", MissingID: "999999999"}

func TestConformance(t *testing.T) {
	_, url := hetznerfake.New(t, token)
	drivertest.RunCloud(t, newDriver, config(url, token), opts)
}

func configured(t *testing.T, url string) *Driver {
	t.Helper()
	d := newDriver().(*Driver)
	if err := d.SetConfig(context.Background(), config(url, token)); err != nil {
		t.Fatal(err)
	}
	return d
}

func create(t *testing.T, d *Driver, label string) cloud.Instance {
	t.Helper()
	in, err := d.CreateInstance(context.Background(), cloud.CreateRequest{Region: "fsn1", Type: "cx22", Image: "debian-12", Label: label, SSHKeys: []string{drivertest.TestSSHKey}})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// Hetzner moves primary IPs only between stopped servers, and the driver says so and holds to it.
func TestSwapNeedsStoppedServers(t *testing.T) {
	_, url := hetznerfake.New(t, token)
	d := configured(t, url)
	ctx := context.Background()
	if !d.SwapIPv4RequiresStopped() {
		t.Fatal("the Hetzner driver says a swap works on running servers; Hetzner's does not")
	}
	a, b := create(t, d, "blue"), create(t, d, "green")
	testkit.WantCode(t, d.SwapIPv4(ctx, a.ID, b.ID), errcode.CloudConflict)
	for _, id := range []string{a.ID, b.ID} {
		if err := d.PowerOff(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.SwapIPv4(ctx, a.ID, b.ID); err != nil {
		t.Fatalf("swap of stopped servers: %v", err)
	}
	a2, _ := d.GetInstance(ctx, a.ID)
	b2, _ := d.GetInstance(ctx, b.ID)
	if len(a2.IPv4) != 1 || a2.IPv4[0] != b.IPv4[0] || len(b2.IPv4) != 1 || b2.IPv4[0] != a.IPv4[0] {
		t.Errorf("after the swap a has %v, b has %v; want %v and %v", a2.IPv4, b2.IPv4, b.IPv4, a.IPv4)
	}
}

// SSH keys are registered once, by fingerprint, and reused.
func TestSSHKeysAreReused(t *testing.T) {
	f, url := hetznerfake.New(t, token)
	d := configured(t, url)
	create(t, d, "one")
	create(t, d, "two")
	if len(f.Keys) != 1 {
		t.Errorf("the project holds %d SSH keys after two servers with the same key, want 1", len(f.Keys))
	}
}

func TestPagesAcrossProviderPages(t *testing.T) {
	f, url := hetznerfake.New(t, token)
	d := configured(t, url)
	ctx := context.Background()
	for i := range 120 {
		create(t, d, "web-"+string(rune('a'+i/26))+string(rune('a'+i%26)))
	}
	for _, size := range []int{0, 7, 50, 60} {
		seen := map[string]bool{}
		tok := ""
		for {
			page, err := d.ListInstances(ctx, cloud.ListRequest{PageSize: size, PageToken: tok})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range page.Instances {
				if seen[in.ID] {
					t.Fatalf("size %d: %s twice", size, in.ID)
				}
				seen[in.ID] = true
			}
			if tok = page.NextPageToken; tok == "" {
				break
			}
		}
		if len(seen) != len(f.Servers) {
			t.Errorf("size %d: paged %d of %d servers", size, len(seen), len(f.Servers))
		}
	}
}

func TestProviderRefusals(t *testing.T) {
	f, url := hetznerfake.New(t, token)
	ctx := context.Background()
	t.Run("rate limit retried", func(t *testing.T) {
		d := configured(t, url)
		f.Mu.Lock()
		f.RateLimit = 2
		f.Mu.Unlock()
		if _, err := d.Regions(ctx); err != nil {
			t.Fatalf("Regions after two 429s: %v", err)
		}
	})
	t.Run("rate limit exhausted", func(t *testing.T) {
		d := configured(t, url)
		f.Mu.Lock()
		f.RateLimit = 1000
		f.Mu.Unlock()
		_, err := d.Regions(ctx)
		f.Mu.Lock()
		f.RateLimit = 0
		f.Mu.Unlock()
		testkit.WantCode(t, err, errcode.CloudRateLimited)
	})
	t.Run("bad token", func(t *testing.T) {
		d := newDriver().(*Driver)
		_ = d.SetConfig(ctx, config(url, "hcloud-token-wrong-0000"))
		_, err := d.Account(ctx)
		testkit.WantCode(t, err, errcode.CloudAuth)
	})
	t.Run("name taken", func(t *testing.T) {
		d := configured(t, url)
		create(t, d, "twin")
		_, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "fsn1", Type: "cx22", Image: "debian-12", Label: "twin"})
		testkit.WantCode(t, err, errcode.CloudInvalid)
	})
	t.Run("quota", func(t *testing.T) {
		d := configured(t, url)
		f.Mu.Lock()
		f.Limit = len(f.Servers)
		f.Mu.Unlock()
		_, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "fsn1", Type: "cx22", Image: "debian-12", Label: "one-too-many"})
		testkit.WantCode(t, err, errcode.CloudQuota)
	})
	t.Run("disk encryption", func(t *testing.T) {
		_, err := configured(t, url).CreateInstance(ctx, cloud.CreateRequest{Region: "fsn1", Type: "cx22", Image: "debian-12", Label: "sealed", DiskEncryption: cloud.DiskEncryptionEnabled})
		testkit.WantCode(t, err, errcode.CloudUnsupported)
	})
	t.Run("type not offered in the region", func(t *testing.T) {
		types, err := configured(t, url).InstanceTypes(ctx, "ash")
		if err != nil {
			t.Fatal(err)
		}
		if len(types) != 1 || types[0].ID != "cpx11" {
			t.Errorf("types in ash = %v, want only cpx11", types)
		}
	})
}

func TestConfigNeedsAProject(t *testing.T) {
	err := (&Driver{}).SetConfig(context.Background(), driver.Config{Settings: []byte(`{}`), Credential: driver.NewSecret(token)})
	testkit.WantCode(t, err, errcode.DriverConfigInvalid)
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
	if m.Kind != manifest.KindDriver || string(m.Class) != string(info.Kind) || m.Name != info.Name || m.Version != info.Version || m.Module.File != "lexicon-driver-cloud-hetzner" {
		t.Errorf("manifest %+v does not match the driver %+v", m, info)
	}
}
