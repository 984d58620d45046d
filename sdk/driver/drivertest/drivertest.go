// Package drivertest is the conformance suite every Lexicon driver runs from its own tests, built-in
// and outside drivers alike: one suite per contract, run against the driver in-process, over gRPC in
// the same process, and over a real go-plugin subprocess.
//
//	func TestMain(m *testing.M) {
//		drivertest.Main(m, drivertest.Drivers{DNS: func() dns.Driver { return &myDriver{} }})
//	}
//
//	func TestConformance(t *testing.T) {
//		drivertest.RunDNS(t, func() dns.Driver { return &myDriver{} }, cfg, drivertest.DNSOptions{Zone: "example.com."})
//	}
//
// Main lets the test binary double as the driver's plugin executable: the suite starts the binary
// again, as go-plugin would start the real driver, so settings and credentials cross a real process
// boundary with AutoMTLS. Tests that create cloud instances refuse to run unless the account's name or
// company holds a marker (CloudOptions.AccountMarker), so a production credential cannot be used by
// mistake.
package drivertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/configschema"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// Drivers are the constructors a test binary serves when the suite starts it as a plugin.
type Drivers struct {
	Cloud func() cloud.Driver
	DNS   func() dns.Driver
}

// serveEnv tells a test binary started by the suite to serve a driver instead of running tests.
const serveEnv = "LEXICON_DRIVERTEST_SERVE"

var registered Drivers

// Main is a driver test package's TestMain. Started by the suite as a plugin it serves the driver of
// the kind asked for and exits; otherwise it runs the tests.
func Main(m *testing.M, d Drivers) {
	switch os.Getenv(serveEnv) {
	case string(driver.KindCloud):
		if d.Cloud == nil {
			fmt.Fprintln(os.Stderr, "drivertest: no cloud driver registered with drivertest.Main")
			os.Exit(2)
		}
		cloud.Serve(d.Cloud())
		os.Exit(0)
	case string(driver.KindDNS):
		if d.DNS == nil {
			fmt.Fprintln(os.Stderr, "drivertest: no DNS driver registered with drivertest.Main")
			os.Exit(2)
		}
		dns.Serve(d.DNS())
		os.Exit(0)
	}
	registered = d
	os.Exit(m.Run())
}

// overGRPC serves impl in this process and returns the host-side client go-plugin dispenses for it.
func overGRPC(t *testing.T, name string, p plugin.Plugin) any {
	t.Helper()
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{name: p})
	t.Cleanup(func() {
		// Stop first: Close asks the server to stop itself, which would race a Stop of ours.
		server.Stop()
		_ = client.Close()
	})
	raw, err := client.Dispense(name)
	if err != nil {
		t.Fatalf("dispense %s: %v", name, err)
	}
	return raw
}

// overProcess starts this test binary as a driver subprocess of kind, the way a host does (AutoMTLS,
// versions negotiated), and returns the dispensed client.
func overProcess(t *testing.T, kind driver.Kind, sets map[int]plugin.PluginSet) any {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), serveEnv+"="+string(kind))
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  driver.Handshake(),
		VersionedPlugins: sets,
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     30 * time.Second,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "drivertest", Level: hclog.Warn, Output: os.Stderr}),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("start driver subprocess: %v", err)
	}
	raw, err := rpc.Dispense(string(kind))
	if err != nil {
		t.Fatalf("dispense %s: %v", kind, err)
	}
	return raw
}

// wantOneOf fails the test unless err's code (the outermost, as testkit.CheckCode compares) is one of
// codes.
func wantOneOf(t *testing.T, err error, what string, codes ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got no error, want one of %v", what, codes)
		return
	}
	if slices.Contains(codes, errcode.Code(err)) {
		return
	}
	t.Errorf("%s: got %v (code %q), want one of %v", what, err, errcode.Code(err), codes)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// runBase checks the base contract and configures d.
func runBase(t *testing.T, d driver.Base, kind driver.Kind, cfg driver.Config) {
	t.Helper()
	c := ctx(t)
	info, err := d.Info(c)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if info.Kind != kind || info.Name == "" || info.Version == "" || len(info.APIVersions) == 0 {
		t.Errorf("Info = %+v: want kind %s, a name, a version and API versions", info, kind)
	}
	schema, err := d.ConfigSchema(c)
	if err != nil {
		t.Fatalf("ConfigSchema: %v", err)
	}
	if err := configschema.Validate(schema, cfg.Settings); err != nil {
		t.Fatalf("the settings given to the suite do not satisfy the driver's own schema: %v", err)
	}
	if err := d.SetConfig(c, cfg); err != nil {
		t.Fatalf("SetConfig: %v", err)
	}
	// An unknown setting is refused (the schema is closed and the driver decodes strictly), and the
	// driver keeps the config it had: the rest of the suite runs on it.
	probe := driver.Config{Settings: []byte(`{"lexicon_drivertest_unknown": true}`), Credential: cfg.Credential}
	if err := configschema.Validate(schema, probe.Settings); err == nil {
		t.Errorf("ConfigSchema %s accepts an unknown setting: it must set additionalProperties to false", schema)
	}
	testkit.CheckCode(t, d.SetConfig(c, probe), errcode.DriverConfigInvalid, "SetConfig with an unknown setting")
}
