package drivertest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/driver/drivertest"
)

func TestMain(m *testing.M) {
	drivertest.Main(m, drivertest.Drivers{
		Cloud: func() cloud.Driver { return &cloud.Mock{SwapRequiresStopped: true} },
		DNS:   func() dns.Driver { return &dns.Mock{} },
	})
}

var mockCred = driver.Config{Credential: driver.NewSecret("mock-credential-0123456789")}

func TestCloudMockConforms(t *testing.T) {
	drivertest.RunCloud(t, func() cloud.Driver { return &cloud.Mock{SwapRequiresStopped: true} }, mockCred, drivertest.CloudOptions{
		Region: "test-1", Type: "small", Image: "debian-12", MissingID: "m-999999",
	})
}

// plainCloud hides the Mock's optional interfaces: the suite must then find them unsupported.
type plainCloud struct{ cloud.Driver }

func TestCloudWithoutOptionalFeaturesConforms(t *testing.T) {
	drivertest.RunCloud(t, func() cloud.Driver { return plainCloud{&cloud.Mock{}} }, mockCred, drivertest.CloudOptions{
		Region: "test-1", Type: "small", Image: "debian-12", MissingID: "m-999999",
	})
}

func TestDNSMockConforms(t *testing.T) {
	drivertest.RunDNS(t, func() dns.Driver { return &dns.Mock{} }, mockCred, drivertest.DNSOptions{Zone: "example.com"})
}

// The suite must be able to fail. Each broken driver below breaks one rule; the suite runs against it
// in a child test process, which must fail naming that rule.

// wholeNameSet replaces every record of a name, whatever its type.
type wholeNameSet struct{ *dns.Mock }

func (w wholeNameSet) SetRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	for _, r := range recs {
		if _, err := w.Mock.DeleteRecords(ctx, zone, []dns.Record{{Name: r.Name}}); err != nil {
			return nil, err
		}
	}
	return w.Mock.SetRecords(ctx, zone, recs)
}

// duplicatingAppend appends a record that is already there a second time.
type duplicatingAppend struct{ *dns.Mock }

func (d duplicatingAppend) AppendRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	added, err := d.Mock.AppendRecords(ctx, zone, recs)
	if err != nil || len(added) > 0 {
		return added, err
	}
	return recs, nil // claims to have added what was there: the "added nothing" rule breaks
}

// leakyDelete fails to delete a record that is already gone.
type leakyDelete struct{ *cloud.Mock }

func (l leakyDelete) DeleteInstance(ctx context.Context, id string) error {
	if _, err := l.Mock.GetInstance(ctx, id); err != nil {
		return err
	}
	return l.Mock.DeleteInstance(ctx, id)
}

func TestBrokenDriver(t *testing.T) {
	switch os.Getenv("LEXICON_DRIVERTEST_BROKEN") {
	case "set":
		drivertest.RunDNS(t, func() dns.Driver { return wholeNameSet{&dns.Mock{}} }, mockCred, drivertest.DNSOptions{Zone: "example.com"})
	case "append":
		drivertest.RunDNS(t, func() dns.Driver { return duplicatingAppend{&dns.Mock{}} }, mockCred, drivertest.DNSOptions{Zone: "example.com"})
	case "delete":
		drivertest.RunCloud(t, func() cloud.Driver { return leakyDelete{&cloud.Mock{}} }, mockCred, drivertest.CloudOptions{
			Region: "test-1", Type: "small", Image: "debian-12", MissingID: "m-999999",
		})
	default:
		t.Skip("run by TestSuiteCatchesBrokenDrivers")
	}
}

func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	for broken, want := range map[string]string{
		"set":    "it must replace only its own name and type",
		"append": "it added nothing",
		"delete": "deletes must be idempotent",
	} {
		t.Run(broken, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestBrokenDriver$/in-process", "-test.v")
			cmd.Env = append(os.Environ(), "LEXICON_DRIVERTEST_BROKEN="+broken)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a driver whose %s is broken:\n%s", broken, out)
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("the suite failed, but not with %q:\n%s", want, out)
			}
		})
	}
}
