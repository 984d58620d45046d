package drivers

import (
	"context"
	"net/netip"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/host/goplugin"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// The operations of the cloud contract as the plane makes them, each audited under its name (intent
// before the call, outcome after). The optional features answer cloud.unsupported naming the enabled
// drivers that have the feature. Two guards stand before a delete: a person types the instance's label
// back (CloudDelete), and automation names the tag it put on what it made (CloudDeleteTagged: the
// test-account safety catch).

// Optional features, as cloud.unsupported's details.feature names them.
const (
	FeatureIPv4Swap        = "IPv4 swap"
	FeatureReverseDNS      = "reverse DNS"
	FeatureMonthlyTransfer = "monthly transfer"
)

// MaxHostname caps a reverse DNS name (RFC 1035's 253 characters of a presentation name).
const MaxHostname = 253

// CloudCreate creates an instance. The request is checked (cloud.invalid) before any driver is asked.
// The audit target is the label, the only name the instance has before the provider answers.
func (m *Manager) CloudCreate(ctx context.Context, actor, account string, req cloud.CreateRequest) (cloud.Instance, error) {
	if err := req.Validate(); err != nil {
		return cloud.Instance{}, err
	}
	return cloudCall(m, ctx, actor, account, store.OpCloudCreate, req.Label, func(ctx context.Context, c *goplugin.Cloud) (cloud.Instance, error) {
		return c.CreateInstance(ctx, req)
	})
}

// CloudGet returns one instance (cloud.not_found when the account has none with that id).
func (m *Manager) CloudGet(ctx context.Context, actor, account, id string) (cloud.Instance, error) {
	if err := cloud.ValidID("id", id); err != nil {
		return cloud.Instance{}, err
	}
	return cloudCall(m, ctx, actor, account, store.OpCloudGet, id, func(ctx context.Context, c *goplugin.Cloud) (cloud.Instance, error) {
		return c.GetInstance(ctx, id)
	})
}

// CloudDelete deletes an instance that a person named twice: by id, and by its label typed back as
// confirm. The instance is fetched first; a confirm that is not its label is refused with
// cloud.confirm_mismatch, recorded in the audit log, and nothing is deleted. It returns the instance as
// it was before the delete.
func (m *Manager) CloudDelete(ctx context.Context, actor, account, id, confirm string) (cloud.Instance, error) {
	in, err := m.CloudGet(ctx, actor, account, id)
	if err != nil {
		return cloud.Instance{}, err
	}
	if confirm != in.Label {
		err := errcode.New(errcode.CloudConfirmMismatch, "instance %s is labelled %q, and %q was typed: nothing was deleted", id, in.Label, confirm).
			With(errcode.DetailID, id).With(errcode.DetailName, confirm)
		m.refused(ctx, actor, account, store.OpCloudDelete, id, err)
		return cloud.Instance{}, err
	}
	return in, m.cloudDelete(ctx, actor, account, id)
}

// CloudDeleteTagged is the delete for automation (rollouts, provisioning cleanup), which no person
// confirms. tag is the tag the automation put on the instances it made (CreateRequest.Tags). On an
// account marked test (AccountSetTest) it deletes as asked. On any other account the instance is fetched
// first and deleted only when its tags hold tag; otherwise the call is refused with cloud.safety_catch,
// recorded in the audit log, and nothing is deleted. An empty tag never passes the catch.
//
//	err := m.CloudDeleteTagged(ctx, "plane:provision", "prod", instanceID, "lexicon-prov-"+provisionID)
func (m *Manager) CloudDeleteTagged(ctx context.Context, actor, account, id, tag string) error {
	if err := m.safetyCatch(ctx, actor, account, id, tag, store.OpCloudDelete); err != nil {
		return err
	}
	return m.cloudDelete(ctx, actor, account, id)
}

// CloudPowerOffTagged and CloudRebootTagged are CloudPowerOff and CloudReboot for automation, behind
// the same safety catch as CloudDeleteTagged.
func (m *Manager) CloudPowerOffTagged(ctx context.Context, actor, account, id, tag string) error {
	if err := m.safetyCatch(ctx, actor, account, id, tag, store.OpCloudPowerOff); err != nil {
		return err
	}
	return m.CloudPowerOff(ctx, actor, account, id)
}

// CloudRebootTagged: see CloudPowerOffTagged.
func (m *Manager) CloudRebootTagged(ctx context.Context, actor, account, id, tag string) error {
	if err := m.safetyCatch(ctx, actor, account, id, tag, store.OpCloudReboot); err != nil {
		return err
	}
	return m.CloudReboot(ctx, actor, account, id)
}

// safetyCatch passes a call of automation on a test account, or on an instance carrying tag; it refuses
// anything else with cloud.safety_catch, recorded under op.
func (m *Manager) safetyCatch(ctx context.Context, actor, account, id, tag, op string) error {
	if err := cloud.ValidID("id", id); err != nil {
		return err
	}
	if !store.ValidAccountName(account) {
		return errcode.New(errcode.AccountNotFound, "no account named %q", account).With(errcode.DetailName, account)
	}
	a, err := m.store.AccountGet(ctx, store.AccountGetParams{Name: account})
	if err != nil {
		return err
	}
	if a.Test {
		return nil
	}
	in, err := m.CloudGet(ctx, actor, account, id)
	if err != nil {
		return err
	}
	if tag != "" && slices.Contains(in.Tags, tag) {
		return nil
	}
	err = errcode.New(errcode.CloudSafetyCatch,
		"account %s is not a test account and instance %s does not carry the tag %q: automation may not change it", account, id, tag).
		With(errcode.DetailID, id).With(errcode.DetailTag, tag)
	m.refused(ctx, actor, account, op, id, err)
	m.log.Warn("cloud safety catch refused an automated call", "account", account, "instance", id, "operation", op, "tag", tag, "by", actor)
	return err
}

func (m *Manager) cloudDelete(ctx context.Context, actor, account, id string) error {
	_, err := cloudCall(m, ctx, actor, account, store.OpCloudDelete, id, func(ctx context.Context, c *goplugin.Cloud) (struct{}, error) {
		return struct{}{}, c.DeleteInstance(ctx, id)
	})
	return err
}

// refused records a call the plane refused before asking the driver.
func (m *Manager) refused(ctx context.Context, actor, account, op, target string, err error) {
	a, aerr := m.store.AccountGet(ctx, store.AccountGetParams{Name: account})
	if aerr != nil {
		return
	}
	m.record(ctx, actor, a.Name, a.Driver, op, target, m.cfg.Now(), err)
}

// instanceCall runs a call about one instance that answers nothing but an error.
func (m *Manager) instanceCall(ctx context.Context, actor, account, op, id string, f func(context.Context, *goplugin.Cloud) error) error {
	if err := cloud.ValidID("id", id); err != nil {
		return err
	}
	_, err := cloudCall(m, ctx, actor, account, op, id, func(ctx context.Context, c *goplugin.Cloud) (struct{}, error) {
		return struct{}{}, f(ctx, c)
	})
	return err
}

// CloudPowerOn asks the provider to start an instance; it returns once the provider accepted.
func (m *Manager) CloudPowerOn(ctx context.Context, actor, account, id string) error {
	return m.instanceCall(ctx, actor, account, store.OpCloudPowerOn, id, func(ctx context.Context, c *goplugin.Cloud) error { return c.PowerOn(ctx, id) })
}

// CloudPowerOff asks the provider to stop an instance; it returns once the provider accepted.
func (m *Manager) CloudPowerOff(ctx context.Context, actor, account, id string) error {
	return m.instanceCall(ctx, actor, account, store.OpCloudPowerOff, id, func(ctx context.Context, c *goplugin.Cloud) error { return c.PowerOff(ctx, id) })
}

// CloudReboot asks the provider to reboot an instance; it returns once the provider accepted.
func (m *Manager) CloudReboot(ctx context.Context, actor, account, id string) error {
	return m.instanceCall(ctx, actor, account, store.OpCloudReboot, id, func(ctx context.Context, c *goplugin.Cloud) error { return c.Reboot(ctx, id) })
}

// CloudSwapIPv4 gives a's public IPv4 address to b and b's to a (cloud.unsupported naming the drivers
// that can; cloud.conflict from a driver that needs both stopped).
func (m *Manager) CloudSwapIPv4(ctx context.Context, actor, account, a, b string) error {
	if err := cloud.ValidID("a", a); err != nil {
		return err
	}
	if err := cloud.ValidID("b", b); err != nil {
		return err
	}
	if a == b {
		return errcode.New(errcode.CloudInvalid, "b: cannot swap an instance's address with itself").With(errcode.DetailField, "b")
	}
	_, err := cloudCall(m, ctx, actor, account, store.OpCloudSwapIPv4, a+","+b, func(ctx context.Context, c *goplugin.Cloud) (struct{}, error) {
		return struct{}{}, c.SwapIPv4(ctx, a, b)
	})
	return m.unsupported(ctx, account, FeatureIPv4Swap, err)
}

// CloudReverseDNS sets the PTR record of one of an instance's addresses to host.
func (m *Manager) CloudReverseDNS(ctx context.Context, actor, account, id string, ip netip.Addr, host string) error {
	if err := cloud.ValidID("id", id); err != nil {
		return err
	}
	if !ip.IsValid() {
		return errcode.New(errcode.CloudInvalid, "ip: name one of the instance's addresses").With(errcode.DetailField, "ip")
	}
	if !validHostname(host) {
		return errcode.New(errcode.CloudInvalid, "hostname: %.64q is not a DNS name", host).With(errcode.DetailField, "hostname")
	}
	_, err := cloudCall(m, ctx, actor, account, store.OpCloudReverseDNS, id, func(ctx context.Context, c *goplugin.Cloud) (struct{}, error) {
		return struct{}{}, c.SetReverseDNS(ctx, id, ip, host)
	})
	return m.unsupported(ctx, account, FeatureReverseDNS, err)
}

// CloudTransfer reports an instance's network transfer this billing month.
func (m *Manager) CloudTransfer(ctx context.Context, actor, account, id string) (cloud.Transfer, error) {
	if err := cloud.ValidID("id", id); err != nil {
		return cloud.Transfer{}, err
	}
	t, err := cloudCall(m, ctx, actor, account, store.OpCloudTransfer, id, func(ctx context.Context, c *goplugin.Cloud) (cloud.Transfer, error) {
		return c.MonthlyTransfer(ctx, id)
	})
	return t, m.unsupported(ctx, account, FeatureMonthlyTransfer, err)
}

// CloudAccountInfo is who a cloud account's credential belongs to, as the provider says, with what the
// plane knows of the account: its driver, its test mark and the optional features the driver has.
type CloudAccountInfo struct {
	Account  store.Account
	Provider cloud.Account
	Features cloud.Features
}

// CloudAccount asks the provider whose credential the account holds, and the driver its features.
func (m *Manager) CloudAccount(ctx context.Context, actor, account string) (CloudAccountInfo, error) {
	var info CloudAccountInfo
	p, err := cloudCall(m, ctx, actor, account, store.OpCloudAccount, "", func(ctx context.Context, c *goplugin.Cloud) (cloud.Account, error) {
		a, err := c.Account(ctx)
		if err == nil {
			info.Features, err = c.Features(ctx)
		}
		return a, err
	})
	if err != nil {
		return CloudAccountInfo{}, err
	}
	info.Provider = p
	info.Account, err = m.store.AccountGet(ctx, store.AccountGetParams{Name: account})
	info.Account.Sealed = nil
	return info, err
}

// AccountSetTest marks an account test, or unmarks it. On a test account automation may make
// destructive calls on instances without their tag (see CloudDeleteTagged), so only an admin marks one.
func (m *Manager) AccountSetTest(ctx context.Context, actor, name string, test bool) (store.Account, error) {
	if !store.ValidAccountName(name) {
		return store.Account{}, errcode.New(errcode.AccountNotFound, "no account named %q", name).With(errcode.DetailName, name)
	}
	t0 := m.cfg.Now()
	a, err := m.store.AccountSetTest(ctx, store.AccountSetTestParams{Name: name, Test: test})
	if err != nil {
		return store.Account{}, err
	}
	op := store.OpAccountMarkTest
	if !test {
		op = store.OpAccountUnmarkTest
	}
	m.record(ctx, actor, a.Name, a.Driver, op, "", t0, nil)
	m.log.Info("driver account test mark changed", "account", a.Name, "driver", a.Driver, "test", test, "by", actor)
	return a, nil
}

// unsupported adds to a driver's cloud.unsupported the enabled drivers that do have feature, so that
// the admin learns where the feature is to be had. Any other outcome passes unchanged.
func (m *Manager) unsupported(ctx context.Context, account, feature string, err error) error {
	if !errcode.Has(err, errcode.CloudUnsupported) {
		return err
	}
	have := m.driversWith(ctx, feature)
	msg := "no enabled driver has it"
	if len(have) > 0 {
		msg = "enabled drivers that have it: " + strings.Join(have, ", ")
	}
	return errcode.Wrap(err, errcode.CloudUnsupported, "the driver of account %s does not support %s; %s", account, feature, msg).
		With(errcode.DetailFeature, feature).With(errcode.DetailDrivers, have)
}

// driversWith lists the enabled, pinned cloud drivers whose executables report feature. Features needs
// no account, so each driver's accountless process answers; a driver that cannot be asked is left out.
func (m *Manager) driversWith(ctx context.Context, feature string) []string {
	have := []string{}
	states, err := m.store.DriverList(ctx)
	if err != nil {
		return have
	}
	cat, err := m.catalog(ctx, false)
	if err != nil {
		return have
	}
	for _, st := range states {
		e, pinned := cat.get(st.Name)
		if !st.Enabled || !pinned || e.Kind != driver.KindCloud {
			continue
		}
		f, err := m.features(ctx, e)
		if err != nil {
			m.log.Warn("drivers: cannot ask a driver its features", "driver", e.Name, "err", err)
			continue
		}
		if hasFeature(f, feature) {
			have = append(have, e.Name)
		}
	}
	slices.Sort(have)
	return have
}

// features asks e's accountless process which optional interfaces it implements.
func (m *Manager) features(ctx context.Context, e Entry) (cloud.Features, error) {
	sl, err := m.slotFor(e.Name)
	if err != nil {
		return cloud.Features{}, err
	}
	sl.life.RLock()
	defer sl.life.RUnlock()
	if sl, err = m.ensure(ctx, e, false); err != nil {
		return cloud.Features{}, err
	}
	sl.mu.Lock()
	base := sl.base
	sl.mu.Unlock()
	if base == nil {
		return cloud.Features{}, errcode.New(errcode.DriverUnavailable, "driver %s is being restarted", e.Name)
	}
	c, err := base.Cloud()
	if err != nil {
		return cloud.Features{}, err
	}
	return c.Features(ctx)
}

func hasFeature(f cloud.Features, feature string) bool {
	switch feature {
	case FeatureIPv4Swap:
		return f.IPv4Swap
	case FeatureReverseDNS:
		return f.ReverseDNS
	case FeatureMonthlyTransfer:
		return f.MonthlyTransfer
	}
	return false
}

// validHostname accepts a DNS name of letters, digits, hyphens and dots, with an optional final dot.
func validHostname(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > MaxHostname {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
