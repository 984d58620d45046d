package drivers_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

// TestCallsAreCounted: every audited driver call is counted by driver, operation and outcome (ok, or
// the call's error code), for the plane's metrics.
func TestCallsAreCounted(t *testing.T) {
	f := newFixture(t, "")
	f.publish("dns-memory")
	m := metrics.New()
	mgr, _ := f.managerWith(f.st, f.key, "", func(c *drivers.Config) { c.Metrics = m })
	_, err := mgr.Enable(f.ctx, "alice", "dns-memory", false)
	must(t, err)
	_, err = mgr.AccountAdd(f.ctx, "alice", memoryAccount("lab", "example.com"))
	must(t, err)
	_, err = mgr.DNSZones(f.ctx, "bob", "lab")
	must(t, err)
	_, err = mgr.Disable(f.ctx, "alice", "dns-memory")
	must(t, err)
	_, err = mgr.DNSZones(f.ctx, "bob", "lab")
	testkit.WantCode(t, err, errcode.DriverDisabled)

	want := `
# HELP lexicon_plane_driver_calls_total Driver calls by driver, operation and outcome (ok, or the error code).
# TYPE lexicon_plane_driver_calls_total counter
`
	// Counted as the audit log records them: enabling, disabling and accounts too.
	for _, line := range []string{
		`lexicon_plane_driver_calls_total{driver="dns-memory",operation="account.add",outcome="ok"} 1`,
		`lexicon_plane_driver_calls_total{driver="dns-memory",operation="dns.list_zones",outcome="driver.disabled"} 1`,
		`lexicon_plane_driver_calls_total{driver="dns-memory",operation="dns.list_zones",outcome="ok"} 1`,
		`lexicon_plane_driver_calls_total{driver="dns-memory",operation="driver.disable",outcome="ok"} 1`,
		`lexicon_plane_driver_calls_total{driver="dns-memory",operation="driver.enable",outcome="ok"} 1`,
	} {
		want += line + "\n"
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "lexicon_plane_driver_calls_total"); err != nil {
		t.Fatal(err)
	}
}
