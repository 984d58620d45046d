package main

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// version is the driver's own version; manifest.json says the same.
const version = "1.0.0"

// DefaultEndpoint is Hetzner Cloud's API.
const DefaultEndpoint = "https://api.hetzner.cloud/v1"

// Hetzner's page sizes run from 1 to 50.
const (
	minPageSize     = 1
	maxPageSize     = 50
	defaultPageSize = 50
)

// Settings are an account's settings; the credential is the project's API token.
type Settings struct {
	// Project is the project's name as the Hetzner console shows it. The API tells a token nothing
	// about its project, so this declared name is the account identity the safety catch checks.
	Project string `json:"project"`
	cloud.Settings
}

var schema = cloud.SettingsSchema(`"project": {"type": "string", "minLength": 1, "maxLength": 128}`, "project")

// Driver is the Hetzner Cloud driver.
type Driver struct {
	// retryWait is hcloud-go's wait between retries of a 429 and between action polls (tests shorten
	// it).
	retryWait time.Duration

	mu      sync.Mutex
	client  *hcloud.Client
	project string
}

func (d *Driver) Info(context.Context) (driver.Info, error) {
	return cloud.Info("hetzner", version), nil
}

func (d *Driver) ConfigSchema(context.Context) (json.RawMessage, error) {
	return schema, nil
}

func (d *Driver) SetConfig(_ context.Context, cfg driver.Config) error {
	var s Settings
	u, err := cloud.Configure(cfg, &s, DefaultEndpoint, "an API token")
	if err != nil {
		return err
	}
	if s.Project == "" {
		return errcode.New(errcode.DriverConfigInvalid, "project: the project's name is required").With(errcode.DetailField, "/project")
	}
	wait := d.retryWait
	if wait == 0 {
		wait = time.Second
	}
	c := hcloud.NewClient(
		hcloud.WithToken(cfg.Credential.Reveal()),
		hcloud.WithEndpoint(strings.TrimSuffix(u.String(), "/")),
		hcloud.WithHTTPClient(&http.Client{Timeout: 60 * time.Second}),
		hcloud.WithRetryOpts(hcloud.RetryOpts{BackoffFunc: hcloud.ExponentialBackoffWithOpts(hcloud.ExponentialBackoffOpts{Base: wait, Multiplier: 2, Cap: 30 * time.Second}), MaxRetries: 4}),
		hcloud.WithPollOpts(hcloud.PollOpts{BackoffFunc: hcloud.ConstantBackoff(wait)}),
		hcloud.WithApplication("lexicon-driver-cloud-hetzner", version),
	)
	d.mu.Lock()
	d.client, d.project = c, s.Project
	d.mu.Unlock()
	return nil
}

func (d *Driver) api() (*hcloud.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client == nil {
		return nil, errcode.New(errcode.DriverNotConfigured, "the driver has no account settings yet")
	}
	return d.client, nil
}

// serverID parses an instance id (cloud.invalid when it cannot be a Hetzner id).
func serverID(field, id string) (int64, error) {
	if err := cloud.ValidID(field, id); err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, errcode.New(errcode.CloudInvalid, "%s: %q is not a Hetzner server id", field, id).With(errcode.DetailField, field)
	}
	return n, nil
}

// apiError codes an error from hcloud-go.
func apiError(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	var he hcloud.Error
	if !errors.As(err, &he) {
		return errcode.Wrap(err, errcode.CloudUnavailable, "Hetzner did not answer when asked to %s", what)
	}
	var code string
	switch he.Code {
	case hcloud.ErrorCodeNotFound:
		code = errcode.CloudNotFound
	case hcloud.ErrorCodeUnauthorized, hcloud.ErrorCodeForbidden:
		code = errcode.CloudAuth
	case hcloud.ErrorCodeRateLimitExceeded:
		code = errcode.CloudRateLimited
	case hcloud.ErrorCodeResourceLimitExceeded:
		code = errcode.CloudQuota
	case hcloud.ErrorCodeInvalidInput, hcloud.ErrorCodeJSONError, hcloud.ErrorCodeUniquenessError, hcloud.ErrorCodeInvalidServerType:
		code = errcode.CloudInvalid
	case hcloud.ErrorCodeLocked, hcloud.ErrorCodeConflict, hcloud.ErrorCodeServerNotStopped, hcloud.ErrorCodeProtected,
		hcloud.ErrorCodePrimaryIPAssigned, hcloud.ErrorCodePrimaryIPAlreadyAssigned, hcloud.ErrorCodeServerHasIPv4:
		code = errcode.CloudConflict
	case hcloud.ErrorUnsupportedError:
		code = errcode.CloudUnsupported
	default:
		code = errcode.CloudUnavailable
	}
	return errcode.Wrap(err, code, "Hetzner refused to %s: %s (%s)", what, he.Message, he.Code).With(errcode.DetailProviderCode, string(he.Code))
}

func (d *Driver) Regions(ctx context.Context) ([]cloud.Region, error) {
	c, err := d.api()
	if err != nil {
		return nil, err
	}
	locs, err := c.Location.All(ctx)
	if err != nil {
		return nil, apiError(err, "list locations")
	}
	var out []cloud.Region
	for _, l := range locs {
		out = append(out, cloud.Region{ID: l.Name, Label: l.Description, Country: strings.ToLower(l.Country)})
	}
	return out, nil
}

func (d *Driver) InstanceTypes(ctx context.Context, region string) ([]cloud.InstanceType, error) {
	c, err := d.api()
	if err != nil {
		return nil, err
	}
	noRegion := errcode.New(errcode.CloudNotFound, "no location %q", region).With(errcode.DetailID, region)
	if cloud.ValidID("region", region) != nil {
		return nil, noRegion
	}
	loc, _, err := c.Location.GetByName(ctx, region)
	if err != nil {
		return nil, apiError(err, "get location "+region)
	}
	if loc == nil {
		return nil, noRegion
	}
	types, err := c.ServerType.All(ctx)
	if err != nil {
		return nil, apiError(err, "list server types")
	}
	var out []cloud.InstanceType
	for _, t := range types {
		offered := slices.ContainsFunc(t.Locations, func(l hcloud.ServerTypeLocation) bool {
			return l.Location != nil && l.Location.Name == region && l.Available
		})
		if offered {
			out = append(out, cloud.InstanceType{ID: t.Name, Label: t.Description, VCPUs: t.Cores, MemoryMiB: int64(t.Memory * 1024), DiskGiB: int64(t.Disk)})
		}
	}
	return out, nil
}

func status(s hcloud.ServerStatus) cloud.Status {
	switch s {
	case hcloud.ServerStatusRunning:
		return cloud.StatusRunning
	case hcloud.ServerStatusOff:
		return cloud.StatusStopped
	case hcloud.ServerStatusInitializing:
		return cloud.StatusProvisioning
	case hcloud.ServerStatusStarting:
		return cloud.StatusStarting
	case hcloud.ServerStatusStopping:
		return cloud.StatusStopping
	case hcloud.ServerStatusDeleting:
		return cloud.StatusDeleting
	}
	return cloud.StatusUnknown
}

func instance(s *hcloud.Server) cloud.Instance {
	out := cloud.Instance{ID: strconv.FormatInt(s.ID, 10), Label: s.Name, Status: status(s.Status), Created: s.Created.UTC()}
	if s.Location != nil {
		out.Region = s.Location.Name
	}
	if s.ServerType != nil {
		out.Type = s.ServerType.Name
	}
	if s.Image != nil {
		out.Image = s.Image.Name
	}
	if a, ok := netip.AddrFromSlice(s.PublicNet.IPv4.IP); ok && !s.PublicNet.IPv4.IsUnspecified() {
		out.IPv4 = append(out.IPv4, a.Unmap())
	}
	if n := s.PublicNet.IPv6.Network; n != nil {
		if p, err := netip.ParsePrefix(n.String()); err == nil {
			out.IPv6 = append(out.IPv6, p.Addr())
		}
	}
	for k := range s.Labels {
		out.Tags = append(out.Tags, k)
	}
	slices.Sort(out.Tags)
	return out
}

// fingerprint is Hetzner's name for an SSH public key: the MD5 of its blob, in colon-separated hex.
func fingerprint(key string) (string, error) {
	f := strings.Fields(key)
	if len(f) < 2 {
		return "", errcode.New(errcode.CloudInvalid, "ssh_keys: not an OpenSSH public key").With(errcode.DetailField, "ssh_keys")
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		return "", errcode.New(errcode.CloudInvalid, "ssh_keys: the key is not base64").With(errcode.DetailField, "ssh_keys")
	}
	sum := md5.Sum(blob)
	hexes := make([]string, len(sum))
	for i, b := range sum {
		hexes[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(hexes, ":"), nil
}

// sshKeys finds each key in the project by fingerprint, adding the ones it lacks: Hetzner takes keys
// only by their ids.
func (d *Driver) sshKeys(ctx context.Context, c *hcloud.Client, keys []string) ([]*hcloud.SSHKey, error) {
	var out []*hcloud.SSHKey
	for _, k := range keys {
		fp, err := fingerprint(k)
		if err != nil {
			return nil, err
		}
		key, _, err := c.SSHKey.GetByFingerprint(ctx, fp)
		if err != nil {
			return nil, apiError(err, "look up SSH key "+fp)
		}
		if key == nil {
			name := "lexicon-" + strings.ReplaceAll(fp, ":", "")[:16]
			key, _, err = c.SSHKey.Create(ctx, hcloud.SSHKeyCreateOpts{Name: name, PublicKey: k, Labels: map[string]string{"managed-by": "lexicon"}})
			if err != nil {
				return nil, apiError(err, "add SSH key "+fp)
			}
		}
		out = append(out, key)
	}
	return out, nil
}

func (d *Driver) CreateInstance(ctx context.Context, req cloud.CreateRequest) (cloud.Instance, error) {
	if err := req.Validate(); err != nil {
		return cloud.Instance{}, err
	}
	if req.DiskEncryption != cloud.DiskEncryptionDefault {
		return cloud.Instance{}, errcode.New(errcode.CloudUnsupported, "Hetzner Cloud offers no disk-encryption choice").With(errcode.DetailField, "disk_encryption")
	}
	c, err := d.api()
	if err != nil {
		return cloud.Instance{}, err
	}
	keys, err := d.sshKeys(ctx, c, req.SSHKeys)
	if err != nil {
		return cloud.Instance{}, err
	}
	labels := map[string]string{}
	for _, t := range req.Tags {
		labels[t] = ""
	}
	start := true
	res, _, err := c.Server.Create(ctx, hcloud.ServerCreateOpts{
		Name: req.Label, ServerType: &hcloud.ServerType{Name: req.Type}, Image: &hcloud.Image{Name: req.Image},
		Location: &hcloud.Location{Name: req.Region}, SSHKeys: keys, UserData: req.UserData, Labels: labels,
		StartAfterCreate: &start,
	})
	if err != nil {
		return cloud.Instance{}, apiError(err, "create server "+req.Label)
	}
	return instance(res.Server), nil
}

// server fetches a server, or cloud.not_found.
func (d *Driver) server(ctx context.Context, id string) (*hcloud.Client, *hcloud.Server, error) {
	n, err := serverID("id", id)
	if err != nil {
		return nil, nil, err
	}
	c, err := d.api()
	if err != nil {
		return nil, nil, err
	}
	s, _, err := c.Server.GetByID(ctx, n)
	if err != nil {
		return nil, nil, apiError(err, "get server "+id)
	}
	if s == nil {
		return nil, nil, cloud.NotFound(id)
	}
	return c, s, nil
}

func (d *Driver) GetInstance(ctx context.Context, id string) (cloud.Instance, error) {
	_, s, err := d.server(ctx, id)
	if err != nil {
		return cloud.Instance{}, err
	}
	return instance(s), nil
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
	list, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{Page: w.Page, PerPage: w.PerPage}, Sort: []string{"id:asc"}})
	if err != nil {
		return cloud.InstancePage{}, apiError(err, "list servers")
	}
	var page cloud.InstancePage
	for _, s := range cloud.Cut(w, list) {
		page.Instances = append(page.Instances, instance(s))
	}
	total := 0
	if resp != nil && resp.Meta.Pagination != nil {
		total = resp.Meta.Pagination.TotalEntries
	}
	page.NextPageToken = w.Next(len(page.Instances), total)
	return page, nil
}

func (d *Driver) DeleteInstance(ctx context.Context, id string) error {
	c, s, err := d.server(ctx, id)
	if errcode.Has(err, errcode.CloudNotFound) {
		return nil // already gone: deletes are idempotent
	}
	if err != nil {
		return err
	}
	if _, _, err := c.Server.DeleteWithResult(ctx, s); err != nil && !hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
		return apiError(err, "delete server "+id)
	}
	return nil
}

func (d *Driver) PowerOn(ctx context.Context, id string) error {
	c, s, err := d.server(ctx, id)
	if err != nil {
		return err
	}
	_, _, err = c.Server.Poweron(ctx, s)
	return apiError(err, "power on server "+id)
}

func (d *Driver) PowerOff(ctx context.Context, id string) error {
	c, s, err := d.server(ctx, id)
	if err != nil {
		return err
	}
	_, _, err = c.Server.Poweroff(ctx, s)
	return apiError(err, "power off server "+id)
}

func (d *Driver) Reboot(ctx context.Context, id string) error {
	c, s, err := d.server(ctx, id)
	if err != nil {
		return err
	}
	_, _, err = c.Server.Reboot(ctx, s)
	return apiError(err, "reboot server "+id)
}

// Account checks the token against the API and returns the project's declared name: Hetzner's API has
// no account or project identity to read.
func (d *Driver) Account(ctx context.Context) (cloud.Account, error) {
	c, err := d.api()
	if err != nil {
		return cloud.Account{}, err
	}
	if _, _, err := c.Location.List(ctx, hcloud.LocationListOpts{ListOpts: hcloud.ListOpts{PerPage: 1}}); err != nil {
		return cloud.Account{}, apiError(err, "read the project")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return cloud.Account{Name: d.project, Company: d.project}, nil
}

// SwapIPv4 exchanges the two servers' primary IPv4 addresses. Hetzner moves a primary IP only between
// powered-off servers, so the driver refuses running ones (cloud.conflict) rather than stop them
// itself: stopping is the caller's decision. If a step fails, the driver puts back what it can.
func (d *Driver) SwapIPv4(ctx context.Context, a, b string) error {
	c, sa, err := d.server(ctx, a)
	if err != nil {
		return err
	}
	_, sb, err := d.server(ctx, b)
	if err != nil {
		return err
	}
	switch {
	case a == b:
		return errcode.New(errcode.CloudInvalid, "b: cannot swap a server's address with itself").With(errcode.DetailField, "b")
	case sa.Status != hcloud.ServerStatusOff || sb.Status != hcloud.ServerStatusOff:
		return errcode.New(errcode.CloudConflict, "Hetzner moves primary IPs only between stopped servers: %s is %s, %s is %s", a, sa.Status, b, sb.Status)
	case sa.PublicNet.IPv4.ID == 0 || sb.PublicNet.IPv4.ID == 0:
		return errcode.New(errcode.CloudConflict, "both servers need a primary IPv4 address to swap")
	}
	ipA, ipB := sa.PublicNet.IPv4.ID, sb.PublicNet.IPv4.ID
	step := func(what string, f func() (*hcloud.Action, *hcloud.Response, error)) error {
		action, _, err := f()
		if err == nil {
			err = c.Action.WaitFor(ctx, action)
		}
		return apiError(err, what)
	}
	assign := func(ip, server int64) error {
		return step(fmt.Sprintf("assign primary IP %d to server %d", ip, server), func() (*hcloud.Action, *hcloud.Response, error) {
			return c.PrimaryIP.Assign(ctx, hcloud.PrimaryIPAssignOpts{ID: ip, AssigneeID: server, AssigneeType: "server"})
		})
	}
	unassign := func(ip int64) error {
		return step(fmt.Sprintf("unassign primary IP %d", ip), func() (*hcloud.Action, *hcloud.Response, error) {
			return c.PrimaryIP.Unassign(ctx, ip)
		})
	}
	if err := unassign(ipA); err != nil {
		return err
	}
	if err := unassign(ipB); err != nil {
		_ = assign(ipA, sa.ID)
		return err
	}
	if err := assign(ipA, sb.ID); err != nil {
		_ = assign(ipA, sa.ID)
		_ = assign(ipB, sb.ID)
		return err
	}
	if err := assign(ipB, sa.ID); err != nil {
		return errcode.Wrap(err, errcode.Code(err), "%s moved to server %s, but %s could not follow to %s: server %s has no primary IPv4 now", sa.PublicNet.IPv4.IP, b, sb.PublicNet.IPv4.IP, a, a)
	}
	return nil
}

// SwapIPv4RequiresStopped is true: Hetzner moves primary IPs only between powered-off servers.
func (d *Driver) SwapIPv4RequiresStopped() bool { return true }

func (d *Driver) SetReverseDNS(ctx context.Context, instanceID string, ip netip.Addr, hostname string) error {
	c, s, err := d.server(ctx, instanceID)
	if err != nil {
		return err
	}
	in := instance(s)
	owned := slices.Contains(in.IPv4, ip)
	if n := s.PublicNet.IPv6.Network; n != nil && n.Contains(ip.AsSlice()) {
		owned = true
	}
	if !owned {
		return errcode.New(errcode.CloudInvalid, "ip: %s is not an address of server %s", ip, instanceID).With(errcode.DetailField, "ip")
	}
	_, _, err = c.Server.ChangeDNSPtr(ctx, s, ip.String(), &hostname)
	return apiError(err, "set the reverse DNS of "+ip.String())
}

// MonthlyTransfer reports the server's outgoing traffic this billing period and the traffic its type
// includes, both in bytes, as Hetzner counts them.
func (d *Driver) MonthlyTransfer(ctx context.Context, instanceID string) (cloud.Transfer, error) {
	_, s, err := d.server(ctx, instanceID)
	if err != nil {
		return cloud.Transfer{}, err
	}
	return cloud.Transfer{UsedBytes: int64(s.OutgoingTraffic), AllowanceBytes: int64(s.IncludedTraffic)}, nil
}

var (
	_ cloud.Driver           = (*Driver)(nil)
	_ cloud.IPv4Swapper      = (*Driver)(nil)
	_ cloud.ReverseDNSSetter = (*Driver)(nil)
	_ cloud.TransferReporter = (*Driver)(nil)
)
