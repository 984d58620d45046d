package drivertest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/driver/drivertest"
)

// A driver's test package wires the suite with two functions: TestMain, so the suite can start the test
// binary again as the driver's plugin, and one test per contract. dns.Mock stands in for the author's
// driver here; it passes the same suite. The account settings and credential are what an admin would
// give the driver; use a test account, never production.
func Example() {
	newDriver := func() dns.Driver { return &dns.Mock{} }
	cfg := driver.Config{
		Settings:   []byte(`{"zones": ["example.com"]}`),
		Credential: driver.NewSecret("test-credential"),
	}
	testMain := func(m *testing.M) { drivertest.Main(m, drivertest.Drivers{DNS: newDriver}) }
	testConformance := func(t *testing.T) {
		drivertest.RunDNS(t, newDriver, cfg, drivertest.DNSOptions{Zone: "example.com"})
	}
	_, _ = testMain, testConformance // in a driver's main_test.go these are TestMain and TestConformance

	// The suite holds the driver to what it says about itself: its kind and the API versions it speaks.
	info, _ := newDriver().Info(context.Background())
	fmt.Println(info.Kind, info.APIVersions)
	// Output: dns [1]
}
