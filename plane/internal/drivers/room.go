package drivers

import (
	"context"
	"log/slog"
	"net/netip"

	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/apiconv"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Room is the drivers' Go API, which the HTTP server and the web UI both call: what the admin API says
// of drivers, accounts and the DNS and cloud calls made through them, over a Manager. Every call that
// reaches a provider is audited by the manager under the token's name.
type Room struct {
	m   *Manager
	log *slog.Logger
}

// NewRoom makes the room over m; a nil m is a plane without drivers, where every call is
// driver.unavailable.
func NewRoom(m *Manager, log *slog.Logger) *Room { return &Room{m: m, log: services.Logger(log)} }

// Available is driver.unavailable on a plane without drivers, nil otherwise.
func (r *Room) Available() error {
	if r.m == nil {
		return errcode.New(errcode.DriverUnavailable, "this plane runs without drivers")
	}
	return nil
}

// List lists the drivers the current release pins, and those enabled.
func (r *Room) List(ctx context.Context, who api.Token) (api.DriverList, error) {
	if err := r.Available(); err != nil {
		return api.DriverList{}, err
	}
	return r.m.List(ctx)
}

// Status answers this replica's driver processes.
func (r *Room) Status(ctx context.Context, who api.Token) (api.StatusList, error) {
	if err := r.Available(); err != nil {
		return api.StatusList{}, err
	}
	return r.m.Status(ctx)
}

// Audit lists the audit log of driver calls, newest first.
func (r *Room) Audit(ctx context.Context, who api.Token, q api.DriversAuditQuery) (api.DriverCallList, error) {
	if err := r.Available(); err != nil {
		return api.DriverCallList{}, err
	}
	res, err := r.m.Audit(ctx, store.DriverCallListParams{Driver: q.Driver, Account: q.Account, Limit: q.Limit, Cursor: q.Cursor})
	return api.DriverCallList{Calls: apiconv.Each(res.Calls, apiconv.DriverCall), NextCursor: res.NextCursor}, err
}

// Enable enables a driver; req carries the admin's consent to run it unconfined.
func (r *Room) Enable(ctx context.Context, who api.Token, name string, req api.DriverEnable) (api.Driver, error) {
	if err := r.Available(); err != nil {
		return api.Driver{}, err
	}
	return r.m.Enable(ctx, who.Name, name, req.Unconfined)
}

// Disable disables a driver on every replica.
func (r *Room) Disable(ctx context.Context, who api.Token, name string) (api.Driver, error) {
	if err := r.Available(); err != nil {
		return api.Driver{}, err
	}
	return r.m.Disable(ctx, who.Name, name)
}

// Schema answers the JSON Schema of an enabled driver's account settings.
func (r *Room) Schema(ctx context.Context, who api.Token, name string) (api.DriverSchema, error) {
	if err := r.Available(); err != nil {
		return api.DriverSchema{}, err
	}
	return r.m.ConfigSchema(ctx, who.Name, name)
}

// Accounts lists the accounts, without their sealed credentials.
func (r *Room) Accounts(ctx context.Context, who api.Token, q api.AccountsListQuery) (api.AccountList, error) {
	if err := r.Available(); err != nil {
		return api.AccountList{}, err
	}
	l, err := r.m.AccountList(ctx, q.Driver)
	return api.AccountList{Accounts: apiconv.Each(l, apiconv.Account)}, err
}

// AddAccount adds an account. The credential is wrapped as a driver.Secret at once and sealed by the
// manager before it reaches the store; the answer is the account without it.
func (r *Room) AddAccount(ctx context.Context, who api.Token, req api.AccountAdd) (api.Account, error) {
	if err := r.Available(); err != nil {
		return api.Account{}, err
	}
	a, err := r.m.AccountAdd(ctx, who.Name, AccountAddRequest{
		Driver: req.Driver, Name: req.Name, Settings: req.Settings, Credential: driver.NewSecret(req.Credential), Test: req.Test,
	})
	return apiconv.Account(a), err
}

// RemoveAccount removes an account and its sealed credential.
func (r *Room) RemoveAccount(ctx context.Context, who api.Token, name string) (api.Account, error) {
	if err := r.Available(); err != nil {
		return api.Account{}, err
	}
	a, err := r.m.AccountRemove(ctx, who.Name, name)
	return apiconv.Account(a), err
}

// MarkTest marks an account test or not (the safety catch of automation's destructive calls).
func (r *Room) MarkTest(ctx context.Context, who api.Token, name string, req api.AccountTest) (api.Account, error) {
	if err := r.Available(); err != nil {
		return api.Account{}, err
	}
	a, err := r.m.AccountSetTest(ctx, who.Name, name, req.Test)
	return apiconv.Account(a), err
}

// Zones lists an account's DNS zones.
func (r *Room) Zones(ctx context.Context, who api.Token, account string) (api.ZoneList, error) {
	if err := r.Available(); err != nil {
		return api.ZoneList{}, err
	}
	z, err := r.m.DNSZones(ctx, who.Name, account)
	return api.ZoneList{Zones: ZonesToAPI(z)}, err
}

// Records lists a zone's records.
func (r *Room) Records(ctx context.Context, who api.Token, account, zone string) (api.RecordList, error) {
	if err := r.Available(); err != nil {
		return api.RecordList{}, err
	}
	recs, err := r.m.DNSRecords(ctx, who.Name, account, zone)
	return api.RecordList{Records: RecordsToAPI(recs)}, err
}

// Reconcile adds to a zone the records it lacks, and names the conflicts it leaves alone (see
// Manager.DNSReconcile). Bad records are refused before any driver call.
func (r *Room) Reconcile(ctx context.Context, who api.Token, account, zone string, req api.Reconcile) (api.ReconcileReport, error) {
	if err := r.Available(); err != nil {
		return api.ReconcileReport{}, err
	}
	want, err := RecordsFromAPI(req.Records)
	if err != nil {
		return api.ReconcileReport{}, err
	}
	res, err := r.m.DNSReconcile(ctx, who.Name, account, zone, want, req.DryRun)
	if err != nil {
		return api.ReconcileReport{}, err
	}
	r.log.Info("dns reconcile", "account", account, "zone", res.Zone, "created", len(res.Created), "present", len(res.Present),
		"conflicts", len(res.Conflicts), "dry_run", req.DryRun, "by", who.Name)
	return ReportToAPI(account, req.DryRun, res), nil
}

// Regions lists a cloud account's regions.
func (r *Room) Regions(ctx context.Context, who api.Token, account string) (api.RegionList, error) {
	if err := r.Available(); err != nil {
		return api.RegionList{}, err
	}
	l, err := r.m.CloudRegions(ctx, who.Name, account)
	return api.RegionList{Regions: RegionsToAPI(l)}, err
}

// Types lists the instance types of a region.
func (r *Room) Types(ctx context.Context, who api.Token, account, region string) (api.TypeList, error) {
	if err := r.Available(); err != nil {
		return api.TypeList{}, err
	}
	l, err := r.m.CloudInstanceTypes(ctx, who.Name, account, region)
	return api.TypeList{Types: TypesToAPI(l)}, err
}

// Instances lists one page of a cloud account's instances.
func (r *Room) Instances(ctx context.Context, who api.Token, account string, q api.CloudInstancesQuery) (api.InstancePage, error) {
	if err := r.Available(); err != nil {
		return api.InstancePage{}, err
	}
	p, err := r.m.CloudInstances(ctx, who.Name, account, cloud.ListRequest{PageSize: q.PageSize, PageToken: q.PageToken})
	return PageToAPI(p), err
}

// Create creates an instance.
func (r *Room) Create(ctx context.Context, who api.Token, account string, req api.CloudCreateRequest) (api.Instance, error) {
	if err := r.Available(); err != nil {
		return api.Instance{}, err
	}
	in, err := r.m.CloudCreate(ctx, who.Name, account, cloud.CreateRequest{
		Region: req.Region, Type: req.Type, Image: req.Image, Label: req.Label, Tags: req.Tags, SSHKeys: req.SSHKeys,
		UserData: req.UserData, DiskEncryption: cloud.DiskEncryption(req.DiskEncryption),
	})
	if err != nil {
		return api.Instance{}, err
	}
	r.log.Info("cloud instance created", "account", account, "instance", in.ID, "label", in.Label, "by", who.Name)
	return InstanceToAPI(in), nil
}

// Instance reads one instance.
func (r *Room) Instance(ctx context.Context, who api.Token, account, id string) (api.Instance, error) {
	if err := r.Available(); err != nil {
		return api.Instance{}, err
	}
	in, err := r.m.CloudGet(ctx, who.Name, account, id)
	if err != nil {
		return api.Instance{}, err
	}
	return InstanceToAPI(in), nil
}

// Delete deletes an instance once the person typed its label back (req.Confirm).
func (r *Room) Delete(ctx context.Context, who api.Token, account, id string, req api.CloudDeleteRequest) (api.Instance, error) {
	if err := r.Available(); err != nil {
		return api.Instance{}, err
	}
	in, err := r.m.CloudDelete(ctx, who.Name, account, id, req.Confirm)
	if err != nil {
		return api.Instance{}, err
	}
	r.log.Info("cloud instance deleted", "account", account, "instance", in.ID, "label", in.Label, "by", who.Name)
	return InstanceToAPI(in), nil
}

// PowerOn asks the provider to start an instance.
func (r *Room) PowerOn(ctx context.Context, who api.Token, account, id string) (api.CloudAccepted, error) {
	return r.accepted(account, store.OpCloudPowerOn, []string{id}, r.call(func() error { return r.m.CloudPowerOn(ctx, who.Name, account, id) }))
}

// PowerOff asks the provider to stop an instance.
func (r *Room) PowerOff(ctx context.Context, who api.Token, account, id string) (api.CloudAccepted, error) {
	return r.accepted(account, store.OpCloudPowerOff, []string{id}, r.call(func() error { return r.m.CloudPowerOff(ctx, who.Name, account, id) }))
}

// Reboot asks the provider to reboot an instance.
func (r *Room) Reboot(ctx context.Context, who api.Token, account, id string) (api.CloudAccepted, error) {
	return r.accepted(account, store.OpCloudReboot, []string{id}, r.call(func() error { return r.m.CloudReboot(ctx, who.Name, account, id) }))
}

// ReverseDNS sets an instance address's reverse DNS name.
func (r *Room) ReverseDNS(ctx context.Context, who api.Token, account, id string, req api.ReverseDNSRequest) (api.CloudAccepted, error) {
	ip, err := netip.ParseAddr(req.IP)
	if err != nil {
		return api.CloudAccepted{}, errcode.New(errcode.CloudInvalid, "ip: %.64q is not an IP address", req.IP).With(errcode.DetailField, "ip")
	}
	return r.accepted(account, store.OpCloudReverseDNS, []string{id}, r.call(func() error {
		return r.m.CloudReverseDNS(ctx, who.Name, account, id, ip, req.Hostname)
	}))
}

// SwapIPv4 swaps the IPv4 addresses of two instances.
func (r *Room) SwapIPv4(ctx context.Context, who api.Token, account string, req api.SwapIPv4Request) (api.CloudAccepted, error) {
	return r.accepted(account, store.OpCloudSwapIPv4, []string{req.A, req.B}, r.call(func() error { return r.m.CloudSwapIPv4(ctx, who.Name, account, req.A, req.B) }))
}

// Transfer answers an instance's network transfer this billing month.
func (r *Room) Transfer(ctx context.Context, who api.Token, account, id string) (api.Transfer, error) {
	if err := r.Available(); err != nil {
		return api.Transfer{}, err
	}
	t, err := r.m.CloudTransfer(ctx, who.Name, account, id)
	if err != nil {
		return api.Transfer{}, err
	}
	return api.Transfer{Account: account, Instance: id, UsedBytes: t.UsedBytes, AllowanceBytes: t.AllowanceBytes}, nil
}

// Account asks the provider whose credential the account holds, and the driver its features.
func (r *Room) Account(ctx context.Context, who api.Token, account string) (api.CloudAccountInfo, error) {
	if err := r.Available(); err != nil {
		return api.CloudAccountInfo{}, err
	}
	info, err := r.m.CloudAccount(ctx, who.Name, account)
	if err != nil {
		return api.CloudAccountInfo{}, err
	}
	f := info.Features
	return api.CloudAccountInfo{Account: info.Account.Name, Driver: info.Account.Driver, Test: info.Account.Test,
		Name: info.Provider.Name, Company: info.Provider.Company, Email: info.Provider.Email,
		Features: api.CloudFeatures{IPv4Swap: f.IPv4Swap, IPv4SwapRequiresStopped: f.IPv4SwapRequiresStopped,
			ReverseDNS: f.ReverseDNS, MonthlyTransfer: f.MonthlyTransfer}}, nil
}

// call runs a cloud call that answers nothing, on a plane with drivers.
func (r *Room) call(f func() error) error {
	if err := r.Available(); err != nil {
		return err
	}
	return f()
}

// accepted is the answer of a cloud call the provider accepted.
func (r *Room) accepted(account, op string, instances []string, err error) (api.CloudAccepted, error) {
	if err != nil {
		return api.CloudAccepted{}, err
	}
	return api.CloudAccepted{Account: account, Operation: op, Instances: instances}, nil
}
