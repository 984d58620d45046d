package drivers

import (
	"context"
	"time"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/internal/metrics"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/driver/dns"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// record appends one entry to the audit log: names and a code, never a credential or an answer. A
// record that cannot be written is logged at error level; the call's own outcome stands.
func (m *Manager) record(ctx context.Context, actor, account, drv, op, target string, t0 time.Time, err error) {
	code := codeOf(err)
	if !store.ValidDriverName(drv) {
		return // a name no driver can have: refused before anything was asked of a driver
	}
	if len(target) > 255 {
		target = target[:255]
	}
	outcome := metrics.OutcomeOK
	if err != nil {
		outcome = code
	}
	m.cfg.Metrics.DriverCall(drv, op, outcome, max(m.cfg.Now().Sub(t0), 0))
	_, aerr := m.store.DriverCallAdd(context.WithoutCancel(ctx), store.DriverCallAddParams{
		Actor: actor, Account: account, Driver: drv, Operation: op, Target: target, Code: code,
		Duration: max(m.cfg.Now().Sub(t0), 0), Now: m.cfg.Now(),
	})
	if aerr != nil {
		m.log.Error("drivers: audit record not written", "driver", drv, "account", account, "operation", op, "code", code, "by", actor, "err", aerr)
	}
}

// begin writes the intent of a call to drv (code pending) and returns what writes its outcome. The
// intent is written before anything is asked of the driver; when it cannot be, the call is refused with
// the store's error, since an unaudited call to a provider is worse than none.
func (m *Manager) begin(ctx context.Context, actor, account, drv, op, target string) (finish func(error), err error) {
	t0 := m.cfg.Now()
	if len(target) > 255 {
		target = target[:255]
	}
	c, err := m.store.DriverCallStart(ctx, store.DriverCallStartParams{
		Actor: actor, Account: account, Driver: drv, Operation: op, Target: target, Now: t0,
	})
	if err != nil {
		m.log.Error("drivers: audit intent not written; the call is not made", "driver", drv, "account", account, "operation", op, "by", actor, "err", err)
		return nil, err
	}
	return func(err error) {
		code := codeOf(err)
		d := max(m.cfg.Now().Sub(t0), 0)
		outcome := metrics.OutcomeOK
		if err != nil {
			outcome = code
		}
		m.cfg.Metrics.DriverCall(drv, op, outcome, d)
		// The caller may have gone; the outcome is still the log's to keep.
		if _, ferr := m.store.DriverCallFinish(context.WithoutCancel(ctx), store.DriverCallFinishParams{ID: c.ID, Code: code, Duration: d}); ferr != nil {
			m.log.Error("drivers: audit outcome not written; the call stays pending in the log", "driver", drv, "account", account,
				"operation", op, "code", code, "by", actor, "call", c.ID, "err", ferr)
		}
	}, nil
}

// codeOf is the audit code of a call's outcome.
func codeOf(err error) string {
	if err == nil {
		return store.CodeOK
	}
	if code := errcode.Code(err); code != "" {
		return code
	}
	return errcode.InternalError
}

// recordRestart records in the audit log that a process of the driver was lost (cause: driver.timeout
// for calls timing out in a row, driver.crashed) and is being restarted. The incident detector
// plane:driver_failing counts these rows, so every replica's restarts are seen by whichever replica
// reconciles.
func (m *Manager) recordRestart(name, cause string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := errcode.New(errcode.DriverCrashed, "driver %s crashed and is being restarted", name)
	if cause == errcode.DriverTimeout {
		err = errcode.New(errcode.DriverTimeout, "driver %s timed out calls in a row and is being restarted", name)
	}
	m.record(ctx, store.AuthorPlane, "", name, store.OpDriverRestart, "", m.cfg.Now(), err)
}

// Audit returns the audit log of driver calls, newest first.
func (m *Manager) Audit(ctx context.Context, p store.DriverCallListParams) (store.DriverCallListResult, error) {
	return m.store.DriverCallList(ctx, p)
}

// do runs one driver call for account, audited under op: the intent (code pending) is written before
// the driver is asked and the outcome after, so a plane that dies mid-call leaves the intent in the log.
// A call whose intent cannot be written is not made.
func do[T any](m *Manager, ctx context.Context, actor, account string, kind driver.Kind, op, target string,
	f func(context.Context, *goplugin.Driver) (T, error)) (T, error) {
	var zero T
	t0 := m.cfg.Now()
	u, err := m.resolve(ctx, actor, account, kind)
	if err != nil {
		m.record(ctx, actor, u.account.Name, u.entry.Name, op, target, t0, err)
		return zero, err
	}
	finish, err := m.begin(ctx, actor, u.account.Name, u.entry.Name, op, target)
	if err != nil {
		return zero, err
	}
	v, err := f(ctx, u.d)
	finish(err)
	if err != nil {
		return zero, err
	}
	return v, nil
}

func dnsCall[T any](m *Manager, ctx context.Context, actor, account, op, target string, f func(context.Context, *goplugin.DNS) (T, error)) (T, error) {
	return do(m, ctx, actor, account, driver.KindDNS, op, target, func(ctx context.Context, d *goplugin.Driver) (T, error) {
		n, err := d.DNS()
		if err != nil {
			var zero T
			return zero, err
		}
		return f(ctx, n)
	})
}

func cloudCall[T any](m *Manager, ctx context.Context, actor, account, op, target string, f func(context.Context, *goplugin.Cloud) (T, error)) (T, error) {
	return do(m, ctx, actor, account, driver.KindCloud, op, target, func(ctx context.Context, d *goplugin.Driver) (T, error) {
		c, err := d.Cloud()
		if err != nil {
			var zero T
			return zero, err
		}
		return f(ctx, c)
	})
}

// DNSZones lists the zones a DNS account serves.
func (m *Manager) DNSZones(ctx context.Context, actor, account string) ([]dns.Zone, error) {
	return dnsCall(m, ctx, actor, account, store.OpDNSListZones, "", func(ctx context.Context, n *goplugin.DNS) ([]dns.Zone, error) {
		return n.ListZones(ctx)
	})
}

// DNSRecords returns a zone's records.
func (m *Manager) DNSRecords(ctx context.Context, actor, account, zone string) ([]dns.Record, error) {
	z, err := dns.NormalizeZone(zone)
	if err != nil {
		return nil, err
	}
	return dnsCall(m, ctx, actor, account, store.OpDNSGetRecords, z, func(ctx context.Context, n *goplugin.DNS) ([]dns.Record, error) {
		return n.GetRecords(ctx, z)
	})
}

// DNSDeleteRecords deletes the zone's records matching recs (see dns.Driver.DeleteRecords) and returns
// what the driver deleted.
func (m *Manager) DNSDeleteRecords(ctx context.Context, actor, account, zone string, recs []dns.Record) ([]dns.Record, error) {
	z, err := dns.NormalizeZone(zone)
	if err != nil {
		return nil, err
	}
	return dnsCall(m, ctx, actor, account, store.OpDNSDeleteRecords, z, func(ctx context.Context, n *goplugin.DNS) ([]dns.Record, error) {
		return n.DeleteRecords(ctx, z, recs)
	})
}

// CloudRegions lists the regions of a cloud account.
func (m *Manager) CloudRegions(ctx context.Context, actor, account string) ([]cloud.Region, error) {
	return cloudCall(m, ctx, actor, account, store.OpCloudRegions, "", func(ctx context.Context, c *goplugin.Cloud) ([]cloud.Region, error) {
		return c.Regions(ctx)
	})
}

// CloudInstanceTypes lists the instance types of a region.
func (m *Manager) CloudInstanceTypes(ctx context.Context, actor, account, region string) ([]cloud.InstanceType, error) {
	if region == "" || len(region) > 64 {
		return nil, errcode.New(errcode.CloudInvalid, "name a region (lexicon cloud regions)").With(errcode.DetailField, "region")
	}
	return cloudCall(m, ctx, actor, account, store.OpCloudInstanceTypes, region, func(ctx context.Context, c *goplugin.Cloud) ([]cloud.InstanceType, error) {
		return c.InstanceTypes(ctx, region)
	})
}

// CloudInstances returns one page of a cloud account's instances.
func (m *Manager) CloudInstances(ctx context.Context, actor, account string, req cloud.ListRequest) (cloud.InstancePage, error) {
	if err := req.Validate(); err != nil {
		return cloud.InstancePage{}, err
	}
	return cloudCall(m, ctx, actor, account, store.OpCloudListInstances, "", func(ctx context.Context, c *goplugin.Cloud) (cloud.InstancePage, error) {
		return c.ListInstances(ctx, req)
	})
}
