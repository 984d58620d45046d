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

	"github.com/digitalocean/godo"
	"golang.org/x/oauth2"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// version is the driver's own version; manifest.json says the same.
const version = "1.0.0"

// DefaultEndpoint is DigitalOcean's API.
const DefaultEndpoint = "https://api.digitalocean.com/"

// DigitalOcean's page sizes run from 1 to 200.
const (
	minPageSize     = 1
	maxPageSize     = 200
	defaultPageSize = 100
)

// Settings are an account's settings, the shared ones alone; the credential is the personal access
// token.
type Settings struct{ cloud.Settings }

// Driver is the DigitalOcean driver. DigitalOcean offers none of the optional features through its
// API in the contract's terms (a Droplet's public IPv4 cannot move, its PTR record is its name, transfer
// is pooled per team), so the driver implements none of them.
type Driver struct {
	// retryWait is the minimum wait between retries of a 429 or a 5xx (tests shorten it).
	retryWait time.Duration

	mu     sync.Mutex
	client *godo.Client
}

func (d *Driver) Info(context.Context) (driver.Info, error) {
	return cloud.Info("digitalocean", version), nil
}

func (d *Driver) ConfigSchema(context.Context) (json.RawMessage, error) {
	return cloud.SettingsSchema(""), nil
}

func (d *Driver) SetConfig(_ context.Context, cfg driver.Config) error {
	u, err := cloud.Configure(cfg, &Settings{}, DefaultEndpoint, "a personal access token")
	if err != nil {
		return err
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	wait := d.retryWait.Seconds()
	if wait == 0 {
		wait = 1
	}
	maxWait := 30.0
	// godo's retrying client requires its credential as an oauth2.Transport (it unwraps one and
	// dereferences it), so golang.org/x/oauth2 is part of the provider SDK's API here.
	hc := &http.Client{
		Timeout:   60 * time.Second,
		Transport: &oauth2.Transport{Source: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: cfg.Credential.Reveal()})},
	}
	c, err := godo.New(hc,
		godo.SetBaseURL(u.String()),
		godo.SetUserAgent("lexicon-driver-cloud-digitalocean/"+version),
		godo.WithRetryAndBackoffs(godo.RetryConfig{RetryMax: 4, RetryWaitMin: &wait, RetryWaitMax: &maxWait}),
	)
	if err != nil {
		return errcode.Wrap(err, errcode.DriverConfigInvalid, "cannot build the DigitalOcean client").With(errcode.DetailField, "/endpoint")
	}
	d.mu.Lock()
	d.client = c
	d.mu.Unlock()
	return nil
}

func (d *Driver) api() (*godo.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client == nil {
		return nil, errcode.New(errcode.DriverNotConfigured, "the driver has no account settings yet")
	}
	return d.client, nil
}

// dropletID parses an instance id (cloud.invalid when it cannot be a Droplet id).
func dropletID(field, id string) (int, error) {
	if err := cloud.ValidID(field, id); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(id)
	if err != nil || n <= 0 {
		return 0, errcode.New(errcode.CloudInvalid, "%s: %q is not a Droplet id", field, id).With(errcode.DetailField, field)
	}
	return n, nil
}

// apiError codes an error from godo. notFound is what a 404 means for this call.
func apiError(err error, what string, notFound error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	var re *godo.ErrorResponse
	if !errors.As(err, &re) || re.Response == nil {
		return errcode.Wrap(err, errcode.CloudUnavailable, "DigitalOcean did not answer when asked to %s", what)
	}
	status := re.Response.StatusCode
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
	case status == http.StatusConflict || status == http.StatusLocked:
		code = errcode.CloudConflict
	case status == http.StatusUnprocessableEntity && strings.Contains(strings.ToLower(re.Message), "limit"):
		code = errcode.CloudQuota
	case status >= 400 && status < 500:
		code = errcode.CloudInvalid
	default:
		code = errcode.CloudUnavailable
	}
	return errcode.Wrap(err, code, "DigitalOcean refused to %s: %s", what, re.Message).With(errcode.DetailHTTPStatus, status)
}

// all fetches every page of a list.
func all[T any](ctx context.Context, list func(context.Context, *godo.ListOptions) ([]T, *godo.Response, error)) ([]T, error) {
	var out []T
	opt := &godo.ListOptions{Page: 1, PerPage: maxPageSize}
	for range 10000 {
		items, resp, err := list(ctx, opt)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if resp == nil || resp.Links == nil || resp.Links.IsLastPage() || len(items) == 0 {
			return out, nil
		}
		opt.Page++
	}
	return nil, errcode.New(errcode.CloudUnavailable, "DigitalOcean's list never ends")
}

func (d *Driver) Regions(ctx context.Context) ([]cloud.Region, error) {
	c, err := d.api()
	if err != nil {
		return nil, err
	}
	regions, err := all(ctx, c.Regions.List)
	if err != nil {
		return nil, apiError(err, "list regions", nil)
	}
	var out []cloud.Region
	for _, r := range regions {
		if r.Available {
			out = append(out, cloud.Region{ID: r.Slug, Label: r.Name})
		}
	}
	return out, nil
}

func (d *Driver) InstanceTypes(ctx context.Context, region string) ([]cloud.InstanceType, error) {
	c, err := d.api()
	if err != nil {
		return nil, err
	}
	regions, err := all(ctx, c.Regions.List)
	if err != nil {
		return nil, apiError(err, "list regions", nil)
	}
	if !slices.ContainsFunc(regions, func(r godo.Region) bool { return r.Slug == region }) {
		return nil, errcode.New(errcode.CloudNotFound, "no region %q", region).With(errcode.DetailID, region)
	}
	sizes, err := all(ctx, c.Sizes.List)
	if err != nil {
		return nil, apiError(err, "list sizes", nil)
	}
	var out []cloud.InstanceType
	for _, s := range sizes {
		if s.Available && slices.Contains(s.Regions, region) {
			out = append(out, cloud.InstanceType{ID: s.Slug, Label: s.Description, VCPUs: s.Vcpus, MemoryMiB: int64(s.Memory), DiskGiB: int64(s.Disk)})
		}
	}
	return out, nil
}

func status(s string) cloud.Status {
	switch s {
	case "new":
		return cloud.StatusProvisioning
	case "active":
		return cloud.StatusRunning
	case "off":
		return cloud.StatusStopped
	}
	return cloud.StatusUnknown
}

func instance(dr *godo.Droplet) cloud.Instance {
	out := cloud.Instance{ID: strconv.Itoa(dr.ID), Label: dr.Name, Status: status(dr.Status), Type: dr.SizeSlug, Tags: slices.Clone(dr.Tags)}
	if dr.Region != nil {
		out.Region = dr.Region.Slug
	}
	if dr.Image != nil {
		out.Image = dr.Image.Slug
	}
	if dr.Networks != nil {
		for _, n := range dr.Networks.V4 {
			if a, err := netip.ParseAddr(n.IPAddress); err == nil && n.Type == "public" {
				out.IPv4 = append(out.IPv4, a)
			}
		}
		for _, n := range dr.Networks.V6 {
			if a, err := netip.ParseAddr(n.IPAddress); err == nil && n.Type == "public" {
				out.IPv6 = append(out.IPv6, a)
			}
		}
	}
	if t, err := time.Parse(time.RFC3339, dr.Created); err == nil {
		out.Created = t.UTC()
	}
	return out
}

// fingerprint is DigitalOcean's name for an SSH public key: the MD5 of its blob in colon-separated hex.
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

// sshKeys makes sure each key is in the account (a Droplet takes only keys the account holds) and
// returns their fingerprints.
func (d *Driver) sshKeys(ctx context.Context, c *godo.Client, keys []string) ([]godo.DropletCreateSSHKey, error) {
	var out []godo.DropletCreateSSHKey
	for _, k := range keys {
		fp, err := fingerprint(k)
		if err != nil {
			return nil, err
		}
		if _, _, err := c.Keys.GetByFingerprint(ctx, fp); err != nil {
			var re *godo.ErrorResponse
			if !errors.As(err, &re) || re.Response == nil || re.Response.StatusCode != http.StatusNotFound {
				return nil, apiError(err, "look up SSH key "+fp, nil)
			}
			name := "lexicon-" + strings.ReplaceAll(fp, ":", "")[:16]
			if _, _, err := c.Keys.Create(ctx, &godo.KeyCreateRequest{Name: name, PublicKey: k}); err != nil {
				return nil, apiError(err, "add SSH key "+fp, nil)
			}
		}
		out = append(out, godo.DropletCreateSSHKey{Fingerprint: fp})
	}
	return out, nil
}

func (d *Driver) CreateInstance(ctx context.Context, req cloud.CreateRequest) (cloud.Instance, error) {
	if err := req.Validate(); err != nil {
		return cloud.Instance{}, err
	}
	if req.DiskEncryption != cloud.DiskEncryptionDefault {
		return cloud.Instance{}, errcode.New(errcode.CloudUnsupported, "DigitalOcean offers no disk-encryption choice for Droplets").With(errcode.DetailField, "disk_encryption")
	}
	c, err := d.api()
	if err != nil {
		return cloud.Instance{}, err
	}
	keys, err := d.sshKeys(ctx, c, req.SSHKeys)
	if err != nil {
		return cloud.Instance{}, err
	}
	tags := req.Tags
	if tags == nil {
		tags = []string{}
	}
	dr, _, err := c.Droplets.Create(ctx, &godo.DropletCreateRequest{
		Name: req.Label, Region: req.Region, Size: req.Type, Image: godo.DropletCreateImage{Slug: req.Image},
		SSHKeys: keys, UserData: req.UserData, Tags: tags, IPv6: true,
	})
	if err != nil {
		return cloud.Instance{}, apiError(err, "create Droplet "+req.Label, nil)
	}
	return instance(dr), nil
}

func (d *Driver) GetInstance(ctx context.Context, id string) (cloud.Instance, error) {
	n, err := dropletID("id", id)
	if err != nil {
		return cloud.Instance{}, err
	}
	c, err := d.api()
	if err != nil {
		return cloud.Instance{}, err
	}
	dr, _, err := c.Droplets.Get(ctx, n)
	if err != nil {
		return cloud.Instance{}, apiError(err, "get Droplet "+id, cloud.NotFound(id))
	}
	return instance(dr), nil
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
	list, resp, err := c.Droplets.List(ctx, &godo.ListOptions{Page: w.Page, PerPage: w.PerPage})
	if err != nil {
		return cloud.InstancePage{}, apiError(err, "list Droplets", nil)
	}
	var page cloud.InstancePage
	for _, dr := range cloud.Cut(w, list) {
		page.Instances = append(page.Instances, instance(&dr))
	}
	total := 0
	if resp != nil && resp.Meta != nil {
		total = resp.Meta.Total
	}
	page.NextPageToken = w.Next(len(page.Instances), total)
	return page, nil
}

func (d *Driver) DeleteInstance(ctx context.Context, id string) error {
	n, err := dropletID("id", id)
	if err != nil {
		return err
	}
	c, err := d.api()
	if err != nil {
		return err
	}
	if _, err := c.Droplets.Delete(ctx, n); err != nil {
		if errcode.Has(apiError(err, "", cloud.NotFound(id)), errcode.CloudNotFound) {
			return nil // already gone: deletes are idempotent
		}
		return apiError(err, "delete Droplet "+id, nil)
	}
	return nil
}

func (d *Driver) action(ctx context.Context, id, what string, f func(*godo.Client, int) (*godo.Action, *godo.Response, error)) error {
	n, err := dropletID("id", id)
	if err != nil {
		return err
	}
	c, err := d.api()
	if err != nil {
		return err
	}
	_, _, err = f(c, n)
	return apiError(err, what+" Droplet "+id, cloud.NotFound(id))
}

func (d *Driver) PowerOn(ctx context.Context, id string) error {
	return d.action(ctx, id, "power on", func(c *godo.Client, n int) (*godo.Action, *godo.Response, error) {
		return c.DropletActions.PowerOn(ctx, n)
	})
}

func (d *Driver) PowerOff(ctx context.Context, id string) error {
	return d.action(ctx, id, "power off", func(c *godo.Client, n int) (*godo.Action, *godo.Response, error) {
		return c.DropletActions.PowerOff(ctx, n)
	})
}

func (d *Driver) Reboot(ctx context.Context, id string) error {
	return d.action(ctx, id, "reboot", func(c *godo.Client, n int) (*godo.Action, *godo.Response, error) {
		return c.DropletActions.Reboot(ctx, n)
	})
}

func (d *Driver) Account(ctx context.Context) (cloud.Account, error) {
	c, err := d.api()
	if err != nil {
		return cloud.Account{}, err
	}
	a, _, err := c.Account.Get(ctx)
	if err != nil {
		return cloud.Account{}, apiError(err, "read the account", nil)
	}
	out := cloud.Account{Name: a.Name, Email: a.Email}
	if a.Team != nil {
		out.Company = a.Team.Name
	}
	return out, nil
}

var _ cloud.Driver = (*Driver)(nil)
