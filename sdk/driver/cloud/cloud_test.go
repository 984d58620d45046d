package cloud_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHQNY5fpWTNtXtpNienSaYvsUmsC1YGWzCBDS/fo/LSF me@host"

func TestCreateRequestValidate(t *testing.T) {
	good := cloud.CreateRequest{Region: "us-east", Type: "g6-nanode-1", Image: "linode/debian12", Label: "web-1",
		Tags: []string{"prod", "team_a"}, SSHKeys: []string{key}, UserData: "#cloud-config\n"}
	if err := good.Validate(); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	cases := map[string]func(*cloud.CreateRequest){
		"region":          func(r *cloud.CreateRequest) { r.Region = "" },
		"type":            func(r *cloud.CreateRequest) { r.Type = "a b" },
		"image":           func(r *cloud.CreateRequest) { r.Image = "" },
		"label":           func(r *cloud.CreateRequest) { r.Label = "Web_1" },
		"tags":            func(r *cloud.CreateRequest) { r.Tags = []string{"env:prod"} },
		"ssh_keys":        func(r *cloud.CreateRequest) { r.SSHKeys = []string{"ssh-ed25519 not/base64!"} },
		"user_data":       func(r *cloud.CreateRequest) { r.UserData = strings.Repeat("x", cloud.MaxUserDataLen+1) },
		"disk_encryption": func(r *cloud.CreateRequest) { r.DiskEncryption = "on" },
	}
	for field, edit := range cases {
		r := good
		edit(&r)
		err := r.Validate()
		e, ok := err.(*errcode.Error)
		if !ok || e.Code != errcode.CloudInvalid || e.Details["field"] != field {
			t.Errorf("bad %s: got %v, want cloud.invalid naming %s", field, err, field)
		}
	}
	long := good
	long.Label = strings.Repeat("a", cloud.MaxLabelLen+1)
	if err := long.Validate(); !errcode.Has(err, errcode.CloudInvalid) {
		t.Errorf("a long label: %v", err)
	}
}

// overGRPC serves impl over an in-process gRPC connection and returns the host-side client.
func overGRPC(t *testing.T, impl cloud.Driver) *cloud.Client {
	t.Helper()
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{cloud.PluginName: &cloud.Plugin{Impl: impl}})
	t.Cleanup(func() { server.Stop(); _ = client.Close() }) // in this order: Close asks the server to stop itself, racing a Stop of ours
	raw, err := client.Dispense(cloud.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*cloud.Client)
}

func TestCallsWaitForConfig(t *testing.T) {
	c := overGRPC(t, &cloud.Mock{})
	ctx := context.Background()
	// Info and Features need no account; provider calls do.
	if _, err := c.Info(ctx); err != nil {
		t.Fatalf("Info before SetConfig: %v", err)
	}
	if _, err := c.Features(ctx); err != nil {
		t.Fatalf("Features before SetConfig: %v", err)
	}
	_, err := c.Regions(ctx)
	if !errcode.Has(err, errcode.DriverNotConfigured) {
		t.Fatalf("Regions before SetConfig = %v, want driver.not_configured", err)
	}
	// A refused config is not a config.
	err = c.SetConfig(ctx, driver.Config{Settings: []byte(`{"account_name": 7}`), Credential: driver.NewSecret("tok-123456")})
	if !errcode.Has(err, errcode.DriverConfigInvalid) {
		t.Fatalf("SetConfig with a bad setting = %v, want driver.config_invalid", err)
	}
	if _, err := c.Regions(ctx); !errcode.Has(err, errcode.DriverNotConfigured) {
		t.Fatalf("Regions after a refused SetConfig = %v, want driver.not_configured", err)
	}
	if err := c.SetConfig(ctx, driver.Config{Credential: driver.NewSecret("tok-123456")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Regions(ctx); err != nil {
		t.Fatalf("Regions after SetConfig: %v", err)
	}
}

func TestFeaturesOverTheWire(t *testing.T) {
	ctx := context.Background()
	f, err := overGRPC(t, &cloud.Mock{SwapRequiresStopped: true}).Features(ctx)
	if err != nil || f != (cloud.Features{IPv4Swap: true, IPv4SwapRequiresStopped: true, ReverseDNS: true, MonthlyTransfer: true}) {
		t.Errorf("Features of the Mock = %+v, %v", f, err)
	}
	plain := overGRPC(t, struct{ cloud.Driver }{&cloud.Mock{}})
	f, err = plain.Features(ctx)
	if err != nil || f != (cloud.Features{}) {
		t.Errorf("Features of a plain driver = %+v, %v", f, err)
	}
	if err := plain.SetConfig(ctx, driver.Config{Credential: driver.NewSecret("tok-123456")}); err != nil {
		t.Fatal(err)
	}
	if err := plain.SwapIPv4(ctx, "a", "b"); !errcode.Has(err, errcode.CloudUnsupported) {
		t.Errorf("SwapIPv4 on a driver without it = %v, want cloud.unsupported", err)
	}
}
