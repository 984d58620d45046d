package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linode/linodego"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// version is the driver's own version; manifest.json says the same.
const version = "1.0.0"

// DefaultEndpoint is Linode's API.
const DefaultEndpoint = "https://api.linode.com/v4"

// Linode's page sizes run from 25 to 500.
const (
	minPageSize     = 25
	maxPageSize     = 500
	defaultPageSize = 100
)

// Settings are an account's settings, the shared ones alone (the endpoint's path names the API
// version); the credential is the personal access token.
type Settings struct{ cloud.Settings }

// Driver is the Linode driver.
type Driver struct {
	// retryWait is linodego's minimum wait between retries of a 429 or a busy Linode (tests shorten it).
	retryWait time.Duration

	mu     sync.Mutex
	client *linodego.Client
}

func (d *Driver) Info(context.Context) (driver.Info, error) {
	return cloud.Info("linode", version), nil
}

func (d *Driver) ConfigSchema(context.Context) (json.RawMessage, error) {
	return cloud.SettingsSchema(""), nil
}

func (d *Driver) SetConfig(_ context.Context, cfg driver.Config) error {
	u, err := cloud.Configure(cfg, &Settings{}, DefaultEndpoint, "a personal access token")
	if err != nil {
		return err
	}
	apiVersion := "v4"
	base := *u
	if i := strings.LastIndex(base.Path, "/v"); i >= 0 {
		apiVersion = strings.Trim(base.Path[i:], "/")
		base.Path = base.Path[:i]
	}
	wait := d.retryWait
	if wait == 0 {
		wait = 2 * time.Second
	}
	c := linodego.NewClient(&http.Client{Timeout: 60 * time.Second})
	c.SetBaseURL(base.String())
	c.SetAPIVersion(apiVersion)
	c.SetToken(cfg.Credential.Reveal())
	c.UseCache(false) // regions and types change rarely, instances often; never answer from a stale copy
	c.SetRetryCount(4)
	c.SetRetryWaitTime(wait)
	c.SetRetryMaxWaitTime(30 * time.Second)
	c.SetUserAgent("lexicon-driver-cloud-linode/" + version)
	d.mu.Lock()
	d.client = &c
	d.mu.Unlock()
	return nil
}

func (d *Driver) api() (*linodego.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client == nil {
		return nil, errcode.New(errcode.DriverNotConfigured, "the driver has no account settings yet")
	}
	return d.client, nil
}

// linodeID parses an instance id (cloud.invalid when it cannot be a Linode id).
func linodeID(field, id string) (int, error) {
	if err := cloud.ValidID(field, id); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(id)
	if err != nil || n <= 0 {
		return 0, errcode.New(errcode.CloudInvalid, "%s: %q is not a Linode id", field, id).With(errcode.DetailField, field)
	}
	return n, nil
}

// apiError codes an error from linodego. notFound is what a 404 means for this call.
func apiError(err error, what string, notFound error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	status, msg := 0, err.Error()
	var pe *linodego.Error
	var ve linodego.Error
	switch {
	case errors.As(err, &pe):
		status, msg = pe.Code, pe.Message
	case errors.As(err, &ve):
		status, msg = ve.Code, ve.Message
	}
	var code string
	switch {
	case status == http.StatusNotFound && notFound != nil:
		return notFound
	case status == http.StatusNotFound:
		code = errcode.CloudNotFound
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		code = errcode.CloudAuth
	case status == http.StatusTooManyRequests:
		code = errcode.CloudRateLimited
	case status == http.StatusConflict:
		code = errcode.CloudConflict
	case status == http.StatusBadRequest && strings.Contains(strings.ToLower(msg), "limit"):
		code = errcode.CloudQuota
	case status == http.StatusBadRequest && strings.Contains(strings.ToLower(msg), "busy"):
		code = errcode.CloudConflict
	case status >= 400 && status < 500:
		code = errcode.CloudInvalid
	default: // 5xx, or no answer at all
		code = errcode.CloudUnavailable
	}
	return errcode.Wrap(err, code, "Linode refused to %s: %s", what, msg).With(errcode.DetailHTTPStatus, status)
}

func (d *Driver) Regions(ctx context.Context) ([]cloud.Region, error) {
	c, err := d.api()
	if err != nil {
		return nil, err
	}
	regions, err := c.ListRegions(ctx, nil)
	if err != nil {
		return nil, apiError(err, "list regions", nil)
	}
	var out []cloud.Region
	for _, r := range regions {
		out = append(out, cloud.Region{ID: r.ID, Label: r.Label, Country: strings.ToLower(r.Country)})
	}
	return out, nil
}

func (d *Driver) InstanceTypes(ctx context.Context, region string) ([]cloud.InstanceType, error) {
	c, err := d.api()
	if err != nil {
		return nil, err
	}
	if err := cloud.ValidID("region", region); err != nil {
		return nil, errcode.New(errcode.CloudNotFound, "no region %q", region).With(errcode.DetailID, region)
	}
	if _, err := c.GetRegion(ctx, region); err != nil {
		return nil, apiError(err, "get region "+region, errcode.New(errcode.CloudNotFound, "no region %q", region).With(errcode.DetailID, region))
	}
	types, err := c.ListTypes(ctx, nil)
	if err != nil {
		return nil, apiError(err, "list types", nil)
	}
	var out []cloud.InstanceType
	for _, t := range types {
		out = append(out, cloud.InstanceType{ID: t.ID, Label: t.Label, VCPUs: t.VCPUs, MemoryMiB: int64(t.Memory), DiskGiB: int64(t.Disk) / 1024})
	}
	return out, nil
}

// status maps Linode's instance states onto the contract's.
func status(s linodego.InstanceStatus) cloud.Status {
	switch s {
	case linodego.InstanceRunning:
		return cloud.StatusRunning
	case linodego.InstanceOffline:
		return cloud.StatusStopped
	case linodego.InstanceBooting:
		return cloud.StatusStarting
	case linodego.InstanceRebooting:
		return cloud.StatusRebooting
	case linodego.InstanceShuttingDown:
		return cloud.StatusStopping
	case linodego.InstanceProvisioning:
		return cloud.StatusProvisioning
	case linodego.InstanceDeleting:
		return cloud.StatusDeleting
	}
	return cloud.StatusUnknown
}

func instance(in *linodego.Instance) cloud.Instance {
	out := cloud.Instance{
		ID: strconv.Itoa(in.ID), Label: in.Label, Region: in.Region, Type: in.Type, Image: in.Image,
		Status: status(in.Status), Tags: slices.Clone(in.Tags),
	}
	for _, ip := range in.IPv4 {
		if ip == nil {
			continue
		}
		if a, ok := netip.AddrFromSlice(*ip); ok {
			a = a.Unmap()
			if !a.IsPrivate() {
				out.IPv4 = append(out.IPv4, a)
			}
		}
	}
	if p, err := netip.ParsePrefix(in.IPv6); err == nil {
		out.IPv6 = append(out.IPv6, p.Addr())
	}
	if in.Created != nil {
		out.Created = in.Created.UTC()
	}
	return out
}

func (d *Driver) CreateInstance(ctx context.Context, req cloud.CreateRequest) (cloud.Instance, error) {
	if err := req.Validate(); err != nil {
		return cloud.Instance{}, err
	}
	c, err := d.api()
	if err != nil {
		return cloud.Instance{}, err
	}
	opts := linodego.InstanceCreateOptions{
		Region: req.Region, Type: req.Type, Image: req.Image, Label: req.Label,
		Tags: req.Tags, AuthorizedKeys: req.SSHKeys, RootPass: rootPassword(),
	}
	if req.UserData != "" {
		opts.Metadata = &linodego.InstanceMetadataOptions{UserData: base64.StdEncoding.EncodeToString([]byte(req.UserData))}
	}
	switch req.DiskEncryption {
	case cloud.DiskEncryptionEnabled:
		opts.DiskEncryption = linodego.InstanceDiskEncryptionEnabled
	case cloud.DiskEncryptionDisabled:
		opts.DiskEncryption = linodego.InstanceDiskEncryptionDisabled
	}
	in, err := c.CreateInstance(ctx, opts)
	if err != nil {
		return cloud.Instance{}, apiError(err, "create instance "+req.Label, nil)
	}
	return instance(in), nil
}

// rootPassword makes the root password Linode requires with an image. Nobody ever learns it: access is
// by the SSH keys given.
func rootPassword() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b) + "!aA1"
}

func (d *Driver) GetInstance(ctx context.Context, id string) (cloud.Instance, error) {
	n, err := linodeID("id", id)
	if err != nil {
		return cloud.Instance{}, err
	}
	c, err := d.api()
	if err != nil {
		return cloud.Instance{}, err
	}
	in, err := c.GetInstance(ctx, n)
	if err != nil {
		return cloud.Instance{}, apiError(err, "get instance "+id, cloud.NotFound(id))
	}
	return instance(in), nil
}

func (d *Driver) ListInstances(ctx context.Context, req cloud.ListRequest) (cloud.InstancePage, error) {
	w, err := cloud.WindowFor(req, minPageSize, maxPageSize, defaultPageSize)
	if err != nil {
		return cloud.InstancePage{}, err
	}
	c, err := d.api()
	if err != nil {
		return cloud.InstancePage{}, err
	}
	opts := &linodego.ListOptions{PageOptions: &linodego.PageOptions{Page: w.Page}, PageSize: w.PerPage}
	list, err := c.ListInstances(ctx, opts)
	if err != nil {
		return cloud.InstancePage{}, apiError(err, "list instances", nil)
	}
	var page cloud.InstancePage
	for _, in := range cloud.Cut(w, list) {
		page.Instances = append(page.Instances, instance(&in))
	}
	page.NextPageToken = w.Next(len(page.Instances), opts.Results)
	return page, nil
}

func (d *Driver) DeleteInstance(ctx context.Context, id string) error {
	n, err := linodeID("id", id)
	if err != nil {
		return err
	}
	c, err := d.api()
	if err != nil {
		return err
	}
	if err := c.DeleteInstance(ctx, n); err != nil {
		if errcode.Has(apiError(err, "", cloud.NotFound(id)), errcode.CloudNotFound) {
			return nil // already gone: deletes are idempotent
		}
		return apiError(err, "delete instance "+id, nil)
	}
	return nil
}

// power runs one power action on an instance.
func (d *Driver) power(ctx context.Context, id, what string, f func(*linodego.Client, int) error) error {
	n, err := linodeID("id", id)
	if err != nil {
		return err
	}
	c, err := d.api()
	if err != nil {
		return err
	}
	return apiError(f(c, n), what+" instance "+id, cloud.NotFound(id))
}

func (d *Driver) PowerOn(ctx context.Context, id string) error {
	return d.power(ctx, id, "boot", func(c *linodego.Client, n int) error { return c.BootInstance(ctx, n, 0) })
}

func (d *Driver) PowerOff(ctx context.Context, id string) error {
	return d.power(ctx, id, "shut down", func(c *linodego.Client, n int) error { return c.ShutdownInstance(ctx, n) })
}

func (d *Driver) Reboot(ctx context.Context, id string) error {
	return d.power(ctx, id, "reboot", func(c *linodego.Client, n int) error { return c.RebootInstance(ctx, n, 0) })
}

func (d *Driver) Account(ctx context.Context) (cloud.Account, error) {
	c, err := d.api()
	if err != nil {
		return cloud.Account{}, err
	}
	a, err := c.GetAccount(ctx)
	if err != nil {
		return cloud.Account{}, apiError(err, "read the account", nil)
	}
	return cloud.Account{Name: strings.TrimSpace(a.FirstName + " " + a.LastName), Company: a.Company, Email: a.Email}, nil
}

// SwapIPv4 reassigns the two instances' public IPv4 addresses in one request (POST
// /networking/ips/assign); Linode moves them while the instances run.
func (d *Driver) SwapIPv4(ctx context.Context, a, b string) error {
	ia, err := d.GetInstance(ctx, a)
	if err != nil {
		return err
	}
	ib, err := d.GetInstance(ctx, b)
	if err != nil {
		return err
	}
	switch {
	case a == b:
		return errcode.New(errcode.CloudInvalid, "b: cannot swap an instance's address with itself").With(errcode.DetailField, "b")
	case ia.Region != ib.Region:
		return errcode.New(errcode.CloudConflict, "instances %s and %s are in different regions (%s, %s): Linode swaps addresses within one region", a, b, ia.Region, ib.Region)
	case len(ia.IPv4) == 0 || len(ib.IPv4) == 0:
		return errcode.New(errcode.CloudConflict, "both instances need a public IPv4 address to swap")
	}
	na, _ := strconv.Atoi(a)
	nb, _ := strconv.Atoi(b)
	c, err := d.api()
	if err != nil {
		return err
	}
	err = c.InstancesAssignIPs(ctx, linodego.LinodesAssignIPsOptions{Region: ia.Region, Assignments: []linodego.LinodeIPAssignment{
		{Address: ia.IPv4[0].String(), LinodeID: nb},
		{Address: ib.IPv4[0].String(), LinodeID: na},
	}})
	return apiError(err, "swap the IPv4 addresses of "+a+" and "+b, nil)
}

// SwapIPv4RequiresStopped is false: Linode reassigns addresses of running instances.
func (d *Driver) SwapIPv4RequiresStopped() bool { return false }

func (d *Driver) SetReverseDNS(ctx context.Context, instanceID string, ip netip.Addr, hostname string) error {
	in, err := d.GetInstance(ctx, instanceID)
	if err != nil {
		return err
	}
	if !slices.Contains(in.IPv4, ip) && !slices.Contains(in.IPv6, ip) {
		return errcode.New(errcode.CloudInvalid, "ip: %s is not an address of instance %s", ip, instanceID).With(errcode.DetailField, "ip")
	}
	c, err := d.api()
	if err != nil {
		return err
	}
	_, err = c.UpdateIPAddress(ctx, ip.String(), linodego.IPAddressUpdateOptions{RDNS: &hostname})
	return apiError(err, "set the reverse DNS of "+ip.String(), nil)
}

// MonthlyTransfer reports Linode's per-instance transfer: bytes used, and the instance's contribution
// to the account's pool (quota, in GB of 10^9 bytes).
func (d *Driver) MonthlyTransfer(ctx context.Context, instanceID string) (cloud.Transfer, error) {
	n, err := linodeID("id", instanceID)
	if err != nil {
		return cloud.Transfer{}, err
	}
	c, err := d.api()
	if err != nil {
		return cloud.Transfer{}, err
	}
	t, err := c.GetInstanceTransfer(ctx, n)
	if err != nil {
		return cloud.Transfer{}, apiError(err, "read the transfer of "+instanceID, cloud.NotFound(instanceID))
	}
	return cloud.Transfer{UsedBytes: int64(t.Used), AllowanceBytes: int64(t.Quota) * 1_000_000_000}, nil
}

var (
	_ cloud.Driver           = (*Driver)(nil)
	_ cloud.IPv4Swapper      = (*Driver)(nil)
	_ cloud.ReverseDNSSetter = (*Driver)(nil)
	_ cloud.TransferReporter = (*Driver)(nil)
)
