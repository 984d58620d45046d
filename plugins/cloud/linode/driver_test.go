package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/plugins/cloud/linode/linodefake"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/drivertest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const token = "linode-pat-7c2f9e10b4d84a55"

// newDriver retries quickly: the fake answers 429 with Retry-After: 0.
func newDriver() cloud.Driver { return &Driver{retryWait: time.Millisecond} }

func TestMain(m *testing.M) {
	drivertest.Main(m, drivertest.Drivers{Cloud: newDriver})
}

func config(endpoint, tok string) driver.Config {
	s, _ := json.Marshal(Settings{cloud.Settings{Endpoint: endpoint}})
	return driver.Config{Settings: s, Credential: driver.NewSecret(tok)}
}

var opts = drivertest.CloudOptions{Region: "us-east", Type: "g6-nanode-1", Image: "linode/debian12", MissingID: "999999999"}

func TestConformance(t *testing.T) {
	_, url := linodefake.New(t, token)
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

// Paging through more instances than one of Linode's pages holds (page_size is at least 25).
func TestPagesAcrossProviderPages(t *testing.T) {
	f, url := linodefake.New(t, token)
	d := configured(t, url)
	ctx := context.Background()
	for i := range 60 {
		_, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "us-east", Type: "g6-nanode-1", Image: "linode/debian12", Label: "web-" + string(rune('a'+i/26)) + string(rune('a'+i%26))})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, size := range []int{0, 7, 25, 40} {
		seen := map[string]bool{}
		token := ""
		for {
			page, err := d.ListInstances(ctx, cloud.ListRequest{PageSize: size, PageToken: token})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range page.Instances {
				if seen[in.ID] {
					t.Fatalf("size %d: %s twice", size, in.ID)
				}
				seen[in.ID] = true
			}
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		if len(seen) != len(f.Instances) {
			t.Errorf("size %d: paged %d of %d instances", size, len(seen), len(f.Instances))
		}
	}
}

func TestRateLimit(t *testing.T) {
	f, url := linodefake.New(t, token)
	d := configured(t, url)
	ctx := context.Background()
	f.Mu.Lock()
	f.RateLimit = 2 // linodego retries 429s after Retry-After
	f.Mu.Unlock()
	if _, err := d.Regions(ctx); err != nil {
		t.Fatalf("Regions after two 429s: %v", err)
	}
	f.Mu.Lock()
	f.RateLimit = 1000
	f.Mu.Unlock()
	_, err := d.Regions(ctx)
	testkit.WantCode(t, err, errcode.CloudRateLimited)
}

func TestProviderRefusals(t *testing.T) {
	f, url := linodefake.New(t, token)
	ctx := context.Background()
	t.Run("bad token", func(t *testing.T) {
		d := newDriver().(*Driver)
		_ = d.SetConfig(ctx, config(url, "linode-pat-wrong-000000"))
		_, err := d.Account(ctx)
		testkit.WantCode(t, err, errcode.CloudAuth)
	})
	t.Run("label taken", func(t *testing.T) {
		d := configured(t, url)
		req := cloud.CreateRequest{Region: "us-east", Type: "g6-nanode-1", Image: "linode/debian12", Label: "twin"}
		if _, err := d.CreateInstance(ctx, req); err != nil {
			t.Fatal(err)
		}
		_, err := d.CreateInstance(ctx, req)
		testkit.WantCode(t, err, errcode.CloudInvalid)
	})
	t.Run("quota", func(t *testing.T) {
		d := configured(t, url)
		f.Mu.Lock()
		f.Limit = len(f.Instances)
		f.Mu.Unlock()
		_, err := d.CreateInstance(ctx, cloud.CreateRequest{Region: "us-east", Type: "g6-nanode-1", Image: "linode/debian12", Label: "one-too-many"})
		testkit.WantCode(t, err, errcode.CloudQuota)
	})
	t.Run("not a linode id", func(t *testing.T) {
		_, err := configured(t, url).GetInstance(ctx, "abc")
		testkit.WantCode(t, err, errcode.CloudInvalid)
	})
}

// Linode swaps addresses of running instances, and says so.
func TestSwapNeedsNoStop(t *testing.T) {
	_, url := linodefake.New(t, token)
	d := configured(t, url)
	if d.SwapIPv4RequiresStopped() {
		t.Fatal("the Linode driver says a swap needs stopped instances; Linode's does not")
	}
	ctx := context.Background()
	a, _ := d.CreateInstance(ctx, cloud.CreateRequest{Region: "us-east", Type: "g6-nanode-1", Image: "linode/debian12", Label: "blue"})
	b, _ := d.CreateInstance(ctx, cloud.CreateRequest{Region: "us-east", Type: "g6-nanode-1", Image: "linode/debian12", Label: "green"})
	if err := d.SwapIPv4(ctx, a.ID, b.ID); err != nil {
		t.Fatalf("swap of running instances: %v", err)
	}
	a2, _ := d.GetInstance(ctx, a.ID)
	if a2.Status != cloud.StatusRunning || len(a2.IPv4) != 1 || a2.IPv4[0] != b.IPv4[0] {
		t.Errorf("after the swap a is %+v, want running with %v", a2, b.IPv4)
	}
	c, _ := d.CreateInstance(ctx, cloud.CreateRequest{Region: "eu-central", Type: "g6-nanode-1", Image: "linode/debian12", Label: "faraway"})
	testkit.WantCode(t, d.SwapIPv4(ctx, a.ID, c.ID), errcode.CloudConflict)
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
	if m.Kind != manifest.KindDriver || string(m.Class) != string(info.Kind) || m.Name != info.Name || m.Version != info.Version || m.Module.File != "lexicon-driver-cloud-linode" {
		t.Errorf("manifest %+v does not match the driver %+v", m, info)
	}
}
