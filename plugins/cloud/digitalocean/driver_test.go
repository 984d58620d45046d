package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plugins/cloud/digitalocean/digitaloceanfake"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/drivertest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const token = "dop_v1_9d3b7f0e2c4a6b8d"

// newDriver retries quickly: the fake answers 429 with Retry-After: 0.
func newDriver() cloud.Driver { return &Driver{retryWait: time.Millisecond} }

func TestMain(m *testing.M) {
	drivertest.Main(m, drivertest.Drivers{Cloud: newDriver})
}

func config(endpoint, tok string) driver.Config {
	s, _ := json.Marshal(Settings{cloud.Settings{Endpoint: endpoint}})
	return driver.Config{Settings: s, Credential: driver.NewSecret(tok)}
}

var opts = drivertest.CloudOptions{Region: "nyc3", Type: "s-1vcpu-1gb", Image: "debian-12-x64", MissingID: "999999999"}

func TestConformance(t *testing.T) {
	_, url := digitaloceanfake.New(t, token)
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

func TestPagesAcrossProviderPages(t *testing.T) {
	f, url := digitaloceanfake.New(t, token)
	d := configured(t, url)
	ctx := context.Background()
	for i := range 230 {
		if _, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "nyc3", Type: "s-1vcpu-1gb", Image: "debian-12-x64", Label: "web-" + string(rune('a'+i/26)) + string(rune('a'+i%26))}); err != nil {
			t.Fatal(err)
		}
	}
	for _, size := range []int{0, 7, 200} {
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
		if len(seen) != len(f.Droplets) {
			t.Errorf("size %d: paged %d of %d Droplets", size, len(seen), len(f.Droplets))
		}
	}
}

func TestProviderRefusals(t *testing.T) {
	f, url := digitaloceanfake.New(t, token)
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
		_, err := d.Account(ctx)
		f.Mu.Lock()
		f.RateLimit = 0
		f.Mu.Unlock()
		testkit.WantCode(t, err, errcode.CloudRateLimited)
	})
	t.Run("bad token", func(t *testing.T) {
		d := newDriver().(*Driver)
		_ = d.SetConfig(ctx, config(url, "dop_v1_wrong_000000"))
		_, err := d.Account(ctx)
		testkit.WantCode(t, err, errcode.CloudAuth)
	})
	t.Run("size not in region", func(t *testing.T) {
		_, err := configured(t, url).CreateInstance(ctx, cloud.CreateRequest{Region: "fra1", Type: "s-2vcpu-2gb", Image: "debian-12-x64", Label: "big"})
		testkit.WantCode(t, err, errcode.CloudInvalid)
	})
	t.Run("quota", func(t *testing.T) {
		d := configured(t, url)
		if _, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "nyc3", Type: "s-1vcpu-1gb", Image: "debian-12-x64", Label: "the-last-one"}); err != nil {
			t.Fatal(err)
		}
		f.Mu.Lock()
		f.Limit = len(f.Droplets)
		f.Mu.Unlock()
		_, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "nyc3", Type: "s-1vcpu-1gb", Image: "debian-12-x64", Label: "one-too-many"})
		testkit.WantCode(t, err, errcode.CloudQuota)
	})
	t.Run("disk encryption", func(t *testing.T) {
		_, err := configured(t, url).CreateInstance(ctx, cloud.CreateRequest{Region: "nyc3", Type: "s-1vcpu-1gb", Image: "debian-12-x64", Label: "sealed", DiskEncryption: cloud.DiskEncryptionDisabled})
		testkit.WantCode(t, err, errcode.CloudUnsupported)
	})
	t.Run("sizes by region", func(t *testing.T) {
		types, err := configured(t, url).InstanceTypes(ctx, "fra1")
		if err != nil {
			t.Fatal(err)
		}
		if len(types) != 1 || types[0].ID != "s-1vcpu-1gb" {
			t.Errorf("sizes in fra1 = %v", types)
		}
	})
}

// DigitalOcean offers none of the optional features; the driver claims none.
func TestNoOptionalFeatures(t *testing.T) {
	if f := cloud.FeaturesOf(&Driver{}); f != (cloud.Features{}) {
		t.Errorf("features = %+v, want none", f)
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
	if m.Kind != manifest.KindDriver || string(m.Class) != string(info.Kind) || m.Name != info.Name || m.Version != info.Version || m.Module.File != "lexicon-driver-cloud-digitalocean" {
		t.Errorf("manifest %+v does not match the driver %+v", m, info)
	}
}
