package goplugin

import (
	"context"
	"encoding/json"
	"net/netip"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// base routes the base contract through the Driver's call discipline.
type base struct{ d *Driver }

func (b base) Info(ctx context.Context) (driver.Info, error) {
	return call(b.d, ctx, func(ctx context.Context, i *instance) (driver.Info, error) { return i.base.Info(ctx) })
}

func (b base) ConfigSchema(ctx context.Context) (json.RawMessage, error) {
	return call(b.d, ctx, func(ctx context.Context, i *instance) (json.RawMessage, error) { return i.base.ConfigSchema(ctx) })
}

// SetConfig sends the account to the driver and keeps it, in memory only, to replay after a restart.
func (b base) SetConfig(ctx context.Context, cfg driver.Config) error { return b.d.setConfig(ctx, cfg) }

// Cloud is a running cloud driver as the plane calls it: every call has a timeout, survives restarts
// and reports a crash as driver.crashed. Features says which optional calls the driver serves.
type Cloud struct{ base }

// Cloud returns the cloud contract of d (usage.invalid for a DNS driver).
func (d *Driver) Cloud() (*Cloud, error) {
	if d.spec.Kind != driver.KindCloud {
		return nil, errcode.New(errcode.UsageInvalid, "driver %s is a %s driver, not a cloud driver", d.spec.Name, d.spec.Kind)
	}
	return &Cloud{base{d}}, nil
}

func cloudCall[T any](c *Cloud, ctx context.Context, f func(context.Context, *cloud.Client) (T, error)) (T, error) {
	return call(c.d, ctx, func(ctx context.Context, i *instance) (T, error) { return f(ctx, i.cloud) })
}

func cloudDo(c *Cloud, ctx context.Context, f func(context.Context, *cloud.Client) error) error {
	_, err := cloudCall(c, ctx, func(ctx context.Context, cl *cloud.Client) (struct{}, error) { return struct{}{}, f(ctx, cl) })
	return err
}

func (c *Cloud) Regions(ctx context.Context) ([]cloud.Region, error) {
	return cloudCall(c, ctx, func(ctx context.Context, cl *cloud.Client) ([]cloud.Region, error) { return cl.Regions(ctx) })
}

func (c *Cloud) InstanceTypes(ctx context.Context, region string) ([]cloud.InstanceType, error) {
	return cloudCall(c, ctx, func(ctx context.Context, cl *cloud.Client) ([]cloud.InstanceType, error) {
		return cl.InstanceTypes(ctx, region)
	})
}

func (c *Cloud) CreateInstance(ctx context.Context, req cloud.CreateRequest) (cloud.Instance, error) {
	return cloudCall(c, ctx, func(ctx context.Context, cl *cloud.Client) (cloud.Instance, error) {
		return cl.CreateInstance(ctx, req)
	})
}

func (c *Cloud) GetInstance(ctx context.Context, id string) (cloud.Instance, error) {
	return cloudCall(c, ctx, func(ctx context.Context, cl *cloud.Client) (cloud.Instance, error) {
		return cl.GetInstance(ctx, id)
	})
}

func (c *Cloud) ListInstances(ctx context.Context, req cloud.ListRequest) (cloud.InstancePage, error) {
	return cloudCall(c, ctx, func(ctx context.Context, cl *cloud.Client) (cloud.InstancePage, error) {
		return cl.ListInstances(ctx, req)
	})
}

func (c *Cloud) DeleteInstance(ctx context.Context, id string) error {
	return cloudDo(c, ctx, func(ctx context.Context, cl *cloud.Client) error { return cl.DeleteInstance(ctx, id) })
}

func (c *Cloud) PowerOn(ctx context.Context, id string) error {
	return cloudDo(c, ctx, func(ctx context.Context, cl *cloud.Client) error { return cl.PowerOn(ctx, id) })
}

func (c *Cloud) PowerOff(ctx context.Context, id string) error {
	return cloudDo(c, ctx, func(ctx context.Context, cl *cloud.Client) error { return cl.PowerOff(ctx, id) })
}

func (c *Cloud) Reboot(ctx context.Context, id string) error {
	return cloudDo(c, ctx, func(ctx context.Context, cl *cloud.Client) error { return cl.Reboot(ctx, id) })
}

func (c *Cloud) Account(ctx context.Context) (cloud.Account, error) {
	return cloudCall(c, ctx, func(ctx context.Context, cl *cloud.Client) (cloud.Account, error) { return cl.Account(ctx) })
}

// Features asks the driver which optional interfaces it implements.
func (c *Cloud) Features(ctx context.Context) (cloud.Features, error) {
	return cloudCall(c, ctx, func(ctx context.Context, cl *cloud.Client) (cloud.Features, error) { return cl.Features(ctx) })
}

// SwapIPv4 exchanges two instances' public IPv4 addresses (cloud.unsupported when the driver cannot;
// Features says whether they must be stopped first).
func (c *Cloud) SwapIPv4(ctx context.Context, a, b string) error {
	return cloudDo(c, ctx, func(ctx context.Context, cl *cloud.Client) error { return cl.SwapIPv4(ctx, a, b) })
}

func (c *Cloud) SetReverseDNS(ctx context.Context, instanceID string, ip netip.Addr, hostname string) error {
	return cloudDo(c, ctx, func(ctx context.Context, cl *cloud.Client) error {
		return cl.SetReverseDNS(ctx, instanceID, ip, hostname)
	})
}

func (c *Cloud) MonthlyTransfer(ctx context.Context, instanceID string) (cloud.Transfer, error) {
	return cloudCall(c, ctx, func(ctx context.Context, cl *cloud.Client) (cloud.Transfer, error) {
		return cl.MonthlyTransfer(ctx, instanceID)
	})
}

// DNS is a running DNS driver as the plane calls it: every call has a timeout, survives restarts and
// reports a crash as driver.crashed.
type DNS struct{ base }

// DNS returns the DNS contract of d (usage.invalid for a cloud driver).
func (d *Driver) DNS() (*DNS, error) {
	if d.spec.Kind != driver.KindDNS {
		return nil, errcode.New(errcode.UsageInvalid, "driver %s is a %s driver, not a DNS driver", d.spec.Name, d.spec.Kind)
	}
	return &DNS{base{d}}, nil
}

func dnsCall[T any](n *DNS, ctx context.Context, f func(context.Context, *dns.Client) (T, error)) (T, error) {
	return call(n.d, ctx, func(ctx context.Context, i *instance) (T, error) { return f(ctx, i.dns) })
}

func (n *DNS) ListZones(ctx context.Context) ([]dns.Zone, error) {
	return dnsCall(n, ctx, func(ctx context.Context, c *dns.Client) ([]dns.Zone, error) { return c.ListZones(ctx) })
}

func (n *DNS) GetRecords(ctx context.Context, zone string) ([]dns.Record, error) {
	return dnsCall(n, ctx, func(ctx context.Context, c *dns.Client) ([]dns.Record, error) { return c.GetRecords(ctx, zone) })
}

func (n *DNS) AppendRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	return dnsCall(n, ctx, func(ctx context.Context, c *dns.Client) ([]dns.Record, error) {
		return c.AppendRecords(ctx, zone, recs)
	})
}

func (n *DNS) SetRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	return dnsCall(n, ctx, func(ctx context.Context, c *dns.Client) ([]dns.Record, error) {
		return c.SetRecords(ctx, zone, recs)
	})
}

func (n *DNS) DeleteRecords(ctx context.Context, zone string, recs []dns.Record) ([]dns.Record, error) {
	return dnsCall(n, ctx, func(ctx context.Context, c *dns.Client) ([]dns.Record, error) {
		return c.DeleteRecords(ctx, zone, recs)
	})
}

var (
	_ cloud.Driver           = (*Cloud)(nil)
	_ cloud.ReverseDNSSetter = (*Cloud)(nil)
	_ cloud.TransferReporter = (*Cloud)(nil)
	_ dns.Driver             = (*DNS)(nil)
)
