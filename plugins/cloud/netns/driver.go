package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// version is the driver's own version; manifest.json says the same.
const version = "1.0.0"

// Defaults of the settings.
const (
	DefaultRoot        = "/var/lib/lexicon-netns"
	DefaultRange       = "10.213.0.0/24"
	DefaultAccountName = "netns"
	// TestMarker is put in the account's company when the settings mark it a test account: the
	// conformance suite's and the plane's safety catch look for it.
	TestMarker = "lexicon-test"
)

// The catalog: one region (this machine), one type, and the images: "host" (the host's own
// filesystem) and those the settings name (machine roots each instance overlays; see image.go).
var (
	regions = []cloud.Region{{ID: "local", Label: "This machine"}}
	types   = []cloud.InstanceType{{ID: "ns-1", Label: "Network namespace (shares the host's CPU, memory and disk)", VCPUs: 1, MemoryMiB: 512}}
)

// Settings are an account's settings. The credential is not used: the account is this machine.
type Settings struct {
	// Root is the state folder (absolute; made 0700 if missing; refused if others can write it).
	Root string `json:"root,omitempty"`
	// Range is the private IPv4 range the driver owns: the gateway (the host) takes its first address,
	// instances the others.
	Range string `json:"range,omitempty"`
	// AccountName is the account's name in Account.
	AccountName string `json:"account_name,omitempty"`
	// Test marks the account a test account (Account's company says TestMarker).
	Test bool `json:"test,omitempty"`
	// TransferAllowanceBytes is each instance's monthly allowance MonthlyTransfer reports (0: none).
	TransferAllowanceBytes int64 `json:"transfer_allowance_bytes,omitempty"`
	// Images names machine roots (made with mmdebstrap, say) that instances of that image overlay as
	// their own root: {"debian-12": "/srv/lexicon/debian-12"}. The image "host" is always there.
	Images map[string]string `json:"images,omitempty"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "root": {"type": "string", "maxLength": 200, "pattern": "^/", "description": "state folder (default /var/lib/lexicon-netns), 0700"},
    "range": {"type": "string", "maxLength": 18, "description": "private IPv4 range the driver owns (default 10.213.0.0/24); its first address is the gateway, the host"},
    "account_name": {"type": "string", "maxLength": 64, "description": "the account's name (default netns)"},
    "test": {"type": "boolean", "description": "mark the account a test account (company lexicon-test)"},
    "transfer_allowance_bytes": {"type": "integer", "minimum": 0, "description": "each instance's monthly transfer allowance (0: none)"},
    "images": {"type": "object", "maxProperties": 16, "additionalProperties": {"type": "string", "maxLength": 200, "pattern": "^/"},
               "description": "image name -> a machine root (owned by root, written by no one else) each instance of the image overlays as its own /"}
  }
}`

// Driver is the netns driver.
type Driver struct {
	// toolDirs are where ip and unshare are looked for (tests point it at an empty folder).
	toolDirs []string
	// log receives what goes wrong inside instances that no call returns (default slog.Default()).
	log *slog.Logger

	mu  sync.Mutex
	cfg *config
}

// config is what SetConfig decided.
type config struct {
	s       Settings
	prefix  netip.Prefix
	gw      netip.Addr
	state   *stateRoot
	tools   tools
	missing error // cloud.unavailable when namespaces cannot be made here
}

func (d *Driver) Info(context.Context) (driver.Info, error) {
	return cloud.Info("netns", version), nil
}

func (d *Driver) ConfigSchema(context.Context) (json.RawMessage, error) {
	return json.RawMessage(schema), nil
}

// SetConfig checks the settings (driver.config_invalid) and whether namespaces can be made here. It
// succeeds where they cannot, so the driver can be enabled and say why: every call on instances then
// answers cloud.unavailable.
func (d *Driver) SetConfig(_ context.Context, cfg driver.Config) error {
	var s Settings
	if err := driver.DecodeSettings(cfg.Settings, &s); err != nil {
		return err
	}
	if s.Root == "" {
		s.Root = DefaultRoot
	}
	if s.Range == "" {
		s.Range = DefaultRange
	}
	if s.AccountName == "" {
		s.AccountName = DefaultAccountName
	}
	bad := func(field, format string, a ...any) error {
		return errcode.New(errcode.DriverConfigInvalid, field+": "+format, a...).With(errcode.DetailField, "/"+field)
	}
	if !filepath.IsAbs(s.Root) || filepath.Clean(s.Root) != s.Root || s.Root == "/" {
		return bad("root", "%q must be an absolute, clean path other than /", s.Root)
	}
	for _, m := range mounts {
		if s.Root == m.target || strings.HasPrefix(s.Root, m.target+"/") {
			return bad("root", "%q is inside %s, which instances see as their own", s.Root, m.target)
		}
	}
	prefix, err := netip.ParsePrefix(s.Range)
	switch {
	case err != nil || !prefix.Addr().Is4() || prefix.Masked() != prefix:
		return bad("range", "%q is not an IPv4 network in CIDR form (10.213.0.0/24)", s.Range)
	case !prefix.Addr().IsPrivate():
		return bad("range", "%q is not a private range (RFC 1918)", s.Range)
	case prefix.Bits() < 16 || prefix.Bits() > 29:
		return bad("range", "%q must be between a /16 and a /29", s.Range)
	}
	if s.TransferAllowanceBytes < 0 {
		return bad("transfer_allowance_bytes", "must not be negative")
	}
	if err := checkImages(s.Images); err != nil {
		return errcode.New(errcode.DriverConfigInvalid, "images: %v", err).With(errcode.DetailField, "/images")
	}
	c := &config{s: s, prefix: prefix, gw: prefix.Addr().Next()}
	c.missing = d.prepare(c)
	if c.missing != nil {
		d.logger().Warn("netns cloud unavailable", "err", c.missing)
	}
	// The config replaced is left open, not closed: a call may still be using it, and SetConfig is
	// rare enough that its descriptor does not matter.
	d.mu.Lock()
	d.cfg = c
	d.mu.Unlock()
	return nil
}

// prepare checks this machine can make namespaces and readies the state root.
func (d *Driver) prepare(c *config) error {
	cannot := func(format string, a ...any) error {
		return errcode.New(errcode.CloudUnavailable, "the netns cloud cannot run here: "+format, a...)
	}
	if os.Geteuid() != 0 {
		return cannot("it must run as root (an unconfined driver) to make network namespaces")
	}
	dirs := d.toolDirs
	if dirs == nil {
		dirs = toolDirs
	}
	t, err := findTools(dirs)
	if err != nil {
		return cannot("%v", err)
	}
	c.tools = t
	for name, root := range c.s.Images {
		if err := checkImageRoot(root); err != nil {
			return cannot("image %s: %v", name, err)
		}
	}
	st, err := openState(c.s.Root)
	if err != nil {
		return cannot("state folder: %v", err)
	}
	c.state = st
	unlock, err := st.lock(true)
	if err != nil {
		return cannot("state folder: %v", err)
	}
	defer unlock()
	if err := st.installHelper(); err != nil {
		return cannot("install the instance helper: %v", err)
	}
	return nil
}

func (d *Driver) logger() *slog.Logger {
	if d.log != nil {
		return d.log
	}
	return slog.Default()
}

// configured returns the config, or driver.not_configured.
func (d *Driver) configured() (*config, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg == nil {
		return nil, errcode.New(errcode.DriverNotConfigured, "the driver has no account settings yet")
	}
	return d.cfg, nil
}

// ready returns the config of a driver that can make namespaces, or why not.
func (d *Driver) ready() (*config, error) {
	c, err := d.configured()
	if err != nil {
		return nil, err
	}
	if c.missing != nil {
		return nil, c.missing
	}
	return c, nil
}

func unavailable(err error, format string, a ...any) error {
	return errcode.Wrap(err, errcode.CloudUnavailable, format+": %v", append(a, err)...)
}

func (d *Driver) Regions(context.Context) ([]cloud.Region, error) {
	if _, err := d.configured(); err != nil {
		return nil, err
	}
	return slices.Clone(regions), nil
}

func (d *Driver) InstanceTypes(_ context.Context, region string) ([]cloud.InstanceType, error) {
	if _, err := d.configured(); err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(regions, func(r cloud.Region) bool { return r.ID == region }) {
		return nil, errcode.New(errcode.CloudNotFound, "no region %q", region).With(errcode.DetailID, region)
	}
	return slices.Clone(types), nil
}

// images is the catalog's images: host, then those the settings name.
func (c *config) images() []string {
	out := []string{HostImage}
	for _, n := range slices.Sorted(maps.Keys(c.s.Images)) {
		out = append(out, n)
	}
	return out
}

func invalid(field, format string, a ...any) error {
	return errcode.New(errcode.CloudInvalid, field+": "+format, a...).With(errcode.DetailField, field)
}

func (d *Driver) CreateInstance(ctx context.Context, req cloud.CreateRequest) (cloud.Instance, error) {
	if err := req.Validate(); err != nil {
		return cloud.Instance{}, err
	}
	images := []string{HostImage}
	if c, err := d.configured(); err == nil {
		images = c.images()
	}
	switch {
	case !slices.ContainsFunc(regions, func(r cloud.Region) bool { return r.ID == req.Region }):
		return cloud.Instance{}, invalid("region", "no region %q (this cloud has local)", req.Region)
	case !slices.ContainsFunc(types, func(t cloud.InstanceType) bool { return t.ID == req.Type }):
		return cloud.Instance{}, invalid("type", "no type %q (this cloud has ns-1)", req.Type)
	case !slices.Contains(images, req.Image):
		return cloud.Instance{}, invalid("image", "no image %q (this cloud has %s)", req.Image, strings.Join(images, ", "))
	case req.DiskEncryption != cloud.DiskEncryptionDefault:
		return cloud.Instance{}, errcode.New(errcode.CloudUnsupported, "disk_encryption: an instance of the netns cloud has no disk of its own").With(errcode.DetailField, "disk_encryption")
	}
	if _, err := parseUserData(req.UserData, req.Image != HostImage); err != nil {
		return cloud.Instance{}, invalid("user_data", "%v", err)
	}
	c, err := d.ready()
	if err != nil {
		return cloud.Instance{}, err
	}
	unlock, err := c.state.lock(true)
	if err != nil {
		return cloud.Instance{}, unavailable(err, "lock the state")
	}
	defer unlock()
	all, err := c.state.all()
	if err != nil {
		return cloud.Instance{}, unavailable(err, "read the instances")
	}
	used := map[netip.Addr]bool{c.gw: true}
	for _, r := range all {
		if r.Label == req.Label {
			return cloud.Instance{}, errcode.New(errcode.CloudConflict, "label %q is taken by instance %s", req.Label, r.ID).With(errcode.DetailField, "label")
		}
		used[r.IPv4] = true
	}
	var addr netip.Addr
	for a := c.gw.Next(); c.prefix.Contains(a); a = a.Next() {
		if !used[a] && c.prefix.Contains(a.Next()) { // the range's last address is its broadcast
			addr = a
			break
		}
	}
	if !addr.IsValid() {
		return cloud.Instance{}, errcode.New(errcode.CloudQuota, "every address of %s is taken (%d instances)", c.prefix, len(all))
	}
	rec := &record{
		ID: c.state.newID(), Label: req.Label, Region: req.Region, Type: req.Type, Image: req.Image,
		Tags: slices.Clone(req.Tags), SSHKeys: slices.Clone(req.SSHKeys), IPv4: addr,
		Created: time.Now().UTC().Truncate(time.Second), ImageRoot: c.s.Images[req.Image],
	}
	undo := func() {
		_ = c.tools.removeNet(context.WithoutCancel(ctx), rec.ID)
		_ = c.state.removeRootfs(rec.ID)
		_ = c.state.removeInstanceDir(rec.ID)
	}
	if err := c.state.makeInstanceDir(rec.ID, req.UserData, req.Image); err != nil {
		undo()
		return cloud.Instance{}, unavailable(err, "make instance %s's folder", rec.ID)
	}
	if err := c.state.save(rec); err != nil {
		undo()
		return cloud.Instance{}, unavailable(err, "save instance %s", rec.ID)
	}
	if err := c.tools.makeNet(ctx, rec, c.gw); err != nil {
		undo()
		return cloud.Instance{}, unavailable(err, "make instance %s's network", rec.ID)
	}
	if rec.ImageRoot != "" {
		err := c.state.mountRootfs(rec)
		if err == nil {
			err = c.state.prepareRootfs(rec)
		}
		if err != nil {
			undo()
			return cloud.Instance{}, unavailable(err, "make instance %s's root", rec.ID)
		}
	}
	if err := d.startBoot(c, rec); err != nil {
		undo()
		return cloud.Instance{}, unavailable(err, "run instance %s's user data", rec.ID)
	}
	d.logger().Info("netns instance created", "id", rec.ID, "label", rec.Label, "ipv4", rec.IPv4)
	return c.instance(rec), nil
}

// startBoot starts the helper that runs rec's user data, in its own session so that it finishes even
// if the driver does not; its pid goes into the record so that a boot that died is told from one
// still running. The caller holds the lock.
func (d *Driver) startBoot(c *config, rec *record) error {
	logf, err := os.OpenFile(filepath.Join(c.state.dir(rec.ID), "log", "cloud-init-output.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := c.tools.inInstance(c.state.path, rec, "boot")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	if st, err := procStart(cmd.Process.Pid); err == nil {
		rec.BootPID = fmt.Sprintf("%d %d", cmd.Process.Pid, st)
	}
	go func() {
		// A failure is in boot.json and the instance's log; an error here may also be a power-off or
		// delete that killed the run.
		if err := cmd.Wait(); err != nil {
			d.logger().Info("netns instance: its user data run ended", "id", rec.ID, "err", err)
		}
		logf.Close()
	}()
	return c.state.save(rec)
}

// bootRunning reports whether rec's boot helper still runs.
func bootRunning(rec *record) bool {
	var pid int
	var st uint64
	if _, err := fmt.Sscanf(rec.BootPID, "%d %d", &pid, &st); err != nil {
		return false
	}
	now, err := procStart(pid)
	return err == nil && now == st && !zombie(pid)
}

// status is rec's state: provisioning while its user data runs; failed when that failed (the reason
// is in its cloud-init-output.log); stopped when powered off or when its namespace is gone (the host
// restarted); else running.
func (c *config) status(rec *record) cloud.Status {
	// Whether the helper runs is asked before its outcome is read: it writes boot.json and then exits,
	// so a helper gone before the read has left its outcome, and no outcome means it died without one.
	running := bootRunning(rec)
	b := c.state.boot(rec.ID)
	switch {
	case b == nil && running:
		return cloud.StatusProvisioning
	case b == nil || b.Error != "":
		return cloud.StatusFailed
	case rec.PoweredOff || !c.tools.netnsExists(rec.ID):
		return cloud.StatusStopped
	}
	return cloud.StatusRunning
}

func (c *config) instance(rec *record) cloud.Instance {
	return cloud.Instance{
		ID: rec.ID, Label: rec.Label, Region: rec.Region, Type: rec.Type, Image: rec.Image,
		Status: c.status(rec), IPv4: []netip.Addr{rec.IPv4}, Tags: slices.Clone(rec.Tags), Created: rec.Created,
	}
}

// lookup reads one instance under a lock the caller holds: cloud.invalid for an id no driver could
// have given, cloud.not_found for one this driver does not have.
func (c *config) lookup(id string) (*record, error) {
	if err := cloud.ValidID("id", id); err != nil {
		return nil, err
	}
	rec, err := c.state.load(id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, cloud.NotFound(id)
	}
	if err != nil {
		return nil, unavailable(err, "read instance %s", id)
	}
	return rec, nil
}

// locked runs f with the state locked, on a driver that can make namespaces.
func (d *Driver) locked(exclusive bool, f func(c *config) error) error {
	c, err := d.ready()
	if err != nil {
		return err
	}
	unlock, err := c.state.lock(exclusive)
	if err != nil {
		return unavailable(err, "lock the state")
	}
	defer unlock()
	return f(c)
}

func (d *Driver) GetInstance(_ context.Context, id string) (cloud.Instance, error) {
	var in cloud.Instance
	err := d.locked(false, func(c *config) error {
		rec, err := c.lookup(id)
		if err == nil {
			in = c.instance(rec)
		}
		return err
	})
	return in, err
}

const (
	defaultPageSize = 100
	tokenPrefix     = "after:"
)

// ListInstances pages in id order; a page token is the last id of the page before, so an instance
// deleted between pages moves no other across a page boundary.
func (d *Driver) ListInstances(_ context.Context, req cloud.ListRequest) (cloud.InstancePage, error) {
	if err := req.Validate(); err != nil {
		return cloud.InstancePage{}, err
	}
	after := ""
	if req.PageToken != "" {
		id, ok := strings.CutPrefix(req.PageToken, tokenPrefix)
		if !ok || !idRE.MatchString(id) {
			return cloud.InstancePage{}, invalid("page_token", "page token %q is not one this driver gave", req.PageToken)
		}
		after = id
	}
	size := req.PageSize
	if size == 0 {
		size = defaultPageSize
	}
	var page cloud.InstancePage
	err := d.locked(false, func(c *config) error {
		all, err := c.state.all()
		if err != nil {
			return unavailable(err, "read the instances")
		}
		for i, rec := range all {
			if rec.ID <= after {
				continue
			}
			if len(page.Instances) == size {
				page.NextPageToken = tokenPrefix + all[i-1].ID
				break
			}
			page.Instances = append(page.Instances, c.instance(rec))
		}
		return nil
	})
	return page, err
}

// DeleteInstance kills what runs in the instance and deletes its namespace, veth pair and folder.
// What is already gone is skipped, so a delete that failed part-way can be retried.
func (d *Driver) DeleteInstance(ctx context.Context, id string) error {
	if err := cloud.ValidID("id", id); err != nil {
		return err
	}
	if !idRE.MatchString(id) {
		return nil // never one of ours: nothing to delete
	}
	return d.locked(true, func(c *config) error {
		// No record, nothing of ours: a namespace of that name would be another state root's.
		if _, err := c.state.load(id); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err := c.tools.removeNet(ctx, id); err != nil {
			return unavailable(err, "delete instance %s's network", id)
		}
		if err := c.state.removeRootfs(id); err != nil {
			return unavailable(err, "delete instance %s's root", id)
		}
		if err := c.state.removeInstanceDir(id); err != nil {
			return unavailable(err, "delete instance %s's folder", id)
		}
		d.logger().Info("netns instance deleted", "id", id)
		return nil
	})
}

// PowerOff stops the instance's services (SIGTERM through the shim, as a shutdown would) and then
// kills whatever else runs in its namespace. A user data run still going is killed too, and the
// instance's status says failed from then on.
func (d *Driver) PowerOff(ctx context.Context, id string) error {
	return d.locked(true, func(c *config) error {
		rec, err := c.lookup(id)
		if err != nil {
			return err
		}
		return d.powerOff(ctx, c, rec)
	})
}

func (d *Driver) powerOff(ctx context.Context, c *config, rec *record) error {
	if c.tools.netnsExists(rec.ID) {
		if err := c.state.mountRootfs(rec); err != nil {
			d.logger().Warn("netns instance: its root is gone; killing what runs in it", "id", rec.ID, "err", err)
		}
		if bootRunning(rec) {
			// Only when the helper has not written its own outcome, which it may do until it is killed.
			_ = writeJSONOnce(filepath.Join(c.state.dir(rec.ID), "boot.json"), bootResult{Error: "powered off before its user data finished", Finished: time.Now().UTC()})
		}
		halt := c.tools.inInstance(c.state.path, rec, "systemctl", "halt-all")
		if out, err := halt.CombinedOutput(); err != nil {
			d.logger().Warn("netns instance: stopping its services failed; killing them", "id", rec.ID, "err", err, "output", string(out))
		}
		if err := c.tools.killAll(ctx, rec.ID); err != nil {
			return unavailable(err, "power off instance %s", rec.ID)
		}
	}
	rec.PoweredOff = true
	if err := c.state.save(rec); err != nil {
		return unavailable(err, "save instance %s", rec.ID)
	}
	return nil
}

// PowerOn makes the instance's network again if it is gone (after the host restarted) and starts the
// services its user data enabled, as a boot would. User data runs once, at create, never again.
func (d *Driver) PowerOn(ctx context.Context, id string) error {
	return d.locked(true, func(c *config) error {
		rec, err := c.lookup(id)
		if err != nil {
			return err
		}
		return d.powerOn(ctx, c, rec)
	})
}

func (d *Driver) powerOn(ctx context.Context, c *config, rec *record) error {
	if !c.tools.netnsExists(rec.ID) {
		if err := c.tools.makeNet(ctx, rec, c.gw); err != nil {
			return unavailable(err, "make instance %s's network", rec.ID)
		}
	}
	if err := c.state.mountRootfs(rec); err != nil {
		return unavailable(err, "mount instance %s's root", rec.ID)
	}
	rec.PoweredOff = false
	if err := c.state.save(rec); err != nil {
		return unavailable(err, "save instance %s", rec.ID)
	}
	if b := c.state.boot(rec.ID); b == nil || b.Error != "" {
		return nil // never booted to the end: nothing was enabled
	}
	start := c.tools.inInstance(c.state.path, rec, "systemctl", "start-enabled")
	if out, err := start.CombinedOutput(); err != nil {
		// The machine is on; a service that does not start is the guest's affair, as on any cloud.
		d.logger().Warn("netns instance: a service did not start", "id", rec.ID, "err", err, "output", string(out))
	}
	return nil
}

func (d *Driver) Reboot(ctx context.Context, id string) error {
	return d.locked(true, func(c *config) error {
		rec, err := c.lookup(id)
		if err != nil {
			return err
		}
		if err := d.powerOff(ctx, c, rec); err != nil {
			return err
		}
		return d.powerOn(ctx, c, rec)
	})
}

func (d *Driver) Account(context.Context) (cloud.Account, error) {
	c, err := d.configured()
	if err != nil {
		return cloud.Account{}, err
	}
	a := cloud.Account{Name: c.s.AccountName}
	if c.s.Test {
		a.Company = TestMarker
	}
	return a, nil
}

// SwapIPv4 exchanges the two instances' addresses, with their reverse DNS names, while they run
// (connections through the old addresses break, as on a provider).
func (d *Driver) SwapIPv4(ctx context.Context, a, b string) error {
	return d.locked(true, func(c *config) error {
		ra, err := c.lookup(a)
		if err != nil {
			return err
		}
		rb, err := c.lookup(b)
		if err != nil {
			return err
		}
		if a == b {
			return invalid("b", "cannot swap an instance's address with itself")
		}
		apply := func() error {
			live := []*record{}
			for _, r := range []*record{ra, rb} {
				if c.tools.netnsExists(r.ID) {
					live = append(live, r)
				}
			}
			for _, r := range live {
				if err := c.tools.flushAddr(ctx, r.ID); err != nil {
					return err
				}
			}
			for _, r := range live {
				if err := c.tools.addAddr(ctx, r, c.gw); err != nil {
					return err
				}
			}
			return nil
		}
		swap := func() {
			ra.IPv4, rb.IPv4 = rb.IPv4, ra.IPv4
			ra.ReverseDNS, rb.ReverseDNS = rb.ReverseDNS, ra.ReverseDNS
		}
		swap()
		if err := apply(); err != nil {
			swap()
			if rerr := apply(); rerr != nil {
				return unavailable(errors.Join(err, rerr), "swap the addresses of %s and %s failed and putting them back failed too: each instance may have no address until it is powered off and on", a, b)
			}
			return unavailable(err, "swap the addresses of %s and %s (put back)", a, b)
		}
		if err := errors.Join(c.state.save(ra), c.state.save(rb)); err != nil {
			return unavailable(err, "save the swap of %s and %s", a, b)
		}
		return nil
	})
}

// SwapIPv4RequiresStopped is false: addresses move between running namespaces.
func (d *Driver) SwapIPv4RequiresStopped() bool { return false }

var hostnameRE = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.?$`)

// SetReverseDNS records the PTR name of an instance's address in the driver's table (an empty
// hostname removes it). The table is the driver's own: no DNS server answers from it.
func (d *Driver) SetReverseDNS(_ context.Context, id string, ip netip.Addr, hostname string) error {
	hostname = strings.ToLower(hostname)
	if hostname != "" && (len(hostname) > 253 || !hostnameRE.MatchString(hostname)) {
		return invalid("hostname", "%q is not a host name", hostname)
	}
	return d.locked(true, func(c *config) error {
		rec, err := c.lookup(id)
		if err != nil {
			return err
		}
		if ip != rec.IPv4 {
			return invalid("ip", "%s is not an address of instance %s", ip, id)
		}
		if rec.ReverseDNS == nil {
			rec.ReverseDNS = map[string]string{}
		}
		if hostname == "" {
			delete(rec.ReverseDNS, ip.String())
		} else {
			rec.ReverseDNS[ip.String()] = strings.TrimSuffix(hostname, ".")
		}
		if err := c.state.save(rec); err != nil {
			return unavailable(err, "save instance %s", id)
		}
		return nil
	})
}

// ReverseDNS returns the instance's reverse DNS table (address -> name).
func (d *Driver) ReverseDNS(_ context.Context, id string) (map[string]string, error) {
	var out map[string]string
	err := d.locked(false, func(c *config) error {
		rec, err := c.lookup(id)
		if err == nil {
			out = maps.Clone(rec.ReverseDNS)
		}
		return err
	})
	return out, err
}

// MonthlyTransfer is the bytes through the instance's veth pair, both ways, since its network was
// last made (create, or power-on after the host restarted); the allowance is the settings'.
func (d *Driver) MonthlyTransfer(_ context.Context, id string) (cloud.Transfer, error) {
	var t cloud.Transfer
	err := d.locked(false, func(c *config) error {
		rec, err := c.lookup(id)
		if err != nil {
			return err
		}
		t.AllowanceBytes = c.s.TransferAllowanceBytes
		if !c.tools.netnsExists(rec.ID) {
			return nil
		}
		rx, tx, err := counters(rec.ID)
		if err != nil {
			return unavailable(err, "read instance %s's counters", id)
		}
		t.UsedBytes = rx + tx
		return nil
	})
	return t, err
}

var (
	_ cloud.Driver           = (*Driver)(nil)
	_ cloud.IPv4Swapper      = (*Driver)(nil)
	_ cloud.ReverseDNSSetter = (*Driver)(nil)
	_ cloud.TransferReporter = (*Driver)(nil)
)
