// Package cloud is the contract of a cloud driver: regions and instance types, instances created,
// listed, powered and deleted, and the account's identity, with optional features (IPv4 swap, reverse
// DNS, monthly transfer) each its own small interface.
//
//	type linode struct{ ... }          // implements cloud.Driver
//	func main() { cloud.Serve(&linode{}) }
//
// Every error a driver returns carries a cloud.* code (errcode.Cloud*), or a driver.* code for
// configuration faults; the codes survive the gRPC hop to the host.
package cloud

import (
	"context"
	"net/netip"
	"regexp"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Driver is what every cloud driver implements.
type Driver interface {
	driver.Base

	// Regions lists the regions the account can create instances in.
	Regions(ctx context.Context) ([]Region, error)
	// InstanceTypes lists the instance types offered in region (cloud.not_found for an unknown one).
	InstanceTypes(ctx context.Context, region string) ([]InstanceType, error)

	// CreateInstance creates an instance and returns it as the provider first reports it (usually
	// provisioning). A driver refuses a request that fails CreateRequest.Validate with cloud.invalid,
	// and a disk-encryption choice it cannot honour with cloud.unsupported.
	CreateInstance(ctx context.Context, req CreateRequest) (Instance, error)
	// GetInstance returns one instance (cloud.not_found when there is none with that id).
	GetInstance(ctx context.Context, id string) (Instance, error)
	// ListInstances returns one page of the account's instances in a stable order. A page holds at
	// most req.PageSize instances (the driver's default when 0) and may hold fewer; NextPageToken is
	// empty on the last page.
	ListInstances(ctx context.Context, req ListRequest) (InstancePage, error)
	// DeleteInstance deletes an instance. Deleting one that does not exist succeeds: deletes are
	// idempotent, so a retried delete is safe.
	DeleteInstance(ctx context.Context, id string) error

	// PowerOn, PowerOff and Reboot ask the provider to change the instance's power state; they return
	// once the provider has accepted the request, not when the state has changed.
	PowerOn(ctx context.Context, id string) error
	PowerOff(ctx context.Context, id string) error
	Reboot(ctx context.Context, id string) error

	// Account returns who the credential belongs to, for the test-account safety catch.
	Account(ctx context.Context) (Account, error)
}

// IPv4Swapper is implemented by drivers that can exchange the public IPv4 addresses of two instances
// (for a blue/green cut-over that keeps DNS unchanged).
type IPv4Swapper interface {
	// SwapIPv4 gives a's public IPv4 address to b and b's to a.
	SwapIPv4(ctx context.Context, a, b string) error
	// SwapIPv4RequiresStopped reports whether both instances must be powered off for the swap; the
	// driver refuses a swap of running instances with cloud.conflict when it is true.
	SwapIPv4RequiresStopped() bool
}

// ReverseDNSSetter is implemented by drivers that can set the PTR record of an instance's address.
type ReverseDNSSetter interface {
	SetReverseDNS(ctx context.Context, instanceID string, ip netip.Addr, hostname string) error
}

// TransferReporter is implemented by drivers that can report an instance's network transfer this
// billing month.
type TransferReporter interface {
	MonthlyTransfer(ctx context.Context, instanceID string) (Transfer, error)
}

// Region is where instances run.
type Region struct {
	ID      string // the provider's id ("us-east", "fsn1", "nyc3")
	Label   string
	Country string // ISO 3166-1 alpha-2, lowercase, when the provider says
}

// InstanceType is a size of instance.
type InstanceType struct {
	ID        string // the provider's id ("g6-nanode-1", "cx22", "s-1vcpu-1gb")
	Label     string
	VCPUs     int
	MemoryMiB int64
	DiskGiB   int64
}

// DiskEncryption is the caller's choice about encrypting the instance's disks.
type DiskEncryption string

const (
	// DiskEncryptionDefault leaves it to the provider.
	DiskEncryptionDefault DiskEncryption = ""
	// DiskEncryptionEnabled requires encrypted disks; a driver that cannot promise it refuses.
	DiskEncryptionEnabled DiskEncryption = "enabled"
	// DiskEncryptionDisabled asks for unencrypted disks; a driver that cannot choose refuses.
	DiskEncryptionDisabled DiskEncryption = "disabled"
)

// CreateRequest is everything an instance is created from.
type CreateRequest struct {
	Region         string
	Type           string
	Image          string
	Label          string
	Tags           []string
	SSHKeys        []string // OpenSSH public keys ("ssh-ed25519 AAAA... comment")
	UserData       string   // cloud-init user data, as text
	DiskEncryption DiskEncryption
}

// Limits on a CreateRequest that every provider can honour.
const (
	MaxLabelLen    = 32
	MaxTags        = 32
	MaxTagLen      = 50
	MaxSSHKeys     = 16
	MaxUserDataLen = 16 << 10
)

var (
	labelRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	tagRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	idRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`)
	sshRE   = regexp.MustCompile(`^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\r\n]*)?$`)
)

// Validate checks what every provider requires of a request, so that drivers refuse bad input the same
// way (cloud.invalid naming details.field) before anything reaches the provider. Labels and tags are
// held to the forms every provider takes: a label is a DNS label (lowercase letters, digits, inner
// hyphens; at most MaxLabelLen), a tag letters, digits, _ and - (Hetzner labels and DigitalOcean tags
// allow no more).
func (r CreateRequest) Validate() error {
	switch {
	case !idRE.MatchString(r.Region):
		return invalid("region", "region %q is not a provider id", r.Region)
	case !idRE.MatchString(r.Type):
		return invalid("type", "type %q is not a provider id", r.Type)
	case !idRE.MatchString(r.Image):
		return invalid("image", "image %q is not a provider id", r.Image)
	case len(r.Label) > MaxLabelLen || !labelRE.MatchString(r.Label):
		return invalid("label", "label %q must be 1 to %d lowercase letters, digits and inner hyphens", r.Label, MaxLabelLen)
	case len(r.Tags) > MaxTags:
		return invalid("tags", "at most %d tags", MaxTags)
	case len(r.SSHKeys) > MaxSSHKeys:
		return invalid("ssh_keys", "at most %d SSH keys", MaxSSHKeys)
	case len(r.UserData) > MaxUserDataLen:
		return invalid("user_data", "user data is %d bytes, over %d", len(r.UserData), MaxUserDataLen)
	}
	for _, t := range r.Tags {
		if len(t) > MaxTagLen || !tagRE.MatchString(t) {
			return invalid("tags", "tag %q must be 1 to %d letters, digits, _ and -", t, MaxTagLen)
		}
	}
	for _, k := range r.SSHKeys {
		if !sshRE.MatchString(k) {
			return invalid("ssh_keys", "not an OpenSSH public key: %.40q", k)
		}
	}
	switch r.DiskEncryption {
	case DiskEncryptionDefault, DiskEncryptionEnabled, DiskEncryptionDisabled:
	default:
		return invalid("disk_encryption", "disk_encryption must be enabled, disabled or empty, not %q", r.DiskEncryption)
	}
	return nil
}

// ValidID refuses an instance id that could not name anything (empty, or not a provider id), with
// cloud.invalid; drivers call it before asking the provider.
func ValidID(field, id string) error {
	if !idRE.MatchString(id) {
		return invalid(field, "%q is not an instance id", id)
	}
	return nil
}

func invalid(field, format string, args ...any) error {
	return errcode.New(errcode.CloudInvalid, "%s: "+format, append([]any{field}, args...)...).With(errcode.DetailField, field)
}

// NotFound is the cloud.not_found error for an instance id.
func NotFound(id string) error {
	return errcode.New(errcode.CloudNotFound, "no instance %q", id).With(errcode.DetailID, id)
}

// Status is an instance's state, the same words for every provider.
type Status string

const (
	StatusProvisioning Status = "provisioning"
	StatusRunning      Status = "running"
	StatusStopping     Status = "stopping"
	StatusStopped      Status = "stopped"
	StatusStarting     Status = "starting"
	StatusRebooting    Status = "rebooting"
	StatusDeleting     Status = "deleting"
	// StatusFailed: the instance exists but did not come up (its user data failed, on a provider that
	// can tell); it stays until deleted.
	StatusFailed  Status = "failed"
	StatusUnknown Status = "unknown"
)

// Instance is a machine as the provider reports it.
type Instance struct {
	ID      string
	Label   string
	Region  string
	Type    string
	Image   string
	Status  Status
	IPv4    []netip.Addr
	IPv6    []netip.Addr
	Tags    []string
	Created time.Time // zero when the provider does not say
}

// ListRequest asks for one page of instances.
type ListRequest struct {
	PageSize  int    // at most this many; 0 means the driver's default
	PageToken string // "" for the first page, else the previous page's NextPageToken
}

// MaxPageSize caps ListRequest.PageSize.
const MaxPageSize = 500

// Validate refuses a negative or oversized page size (cloud.invalid).
func (r ListRequest) Validate() error {
	if r.PageSize < 0 || r.PageSize > MaxPageSize {
		return invalid("page_size", "page size must be 0 to %d, not %d", MaxPageSize, r.PageSize)
	}
	if len(r.PageToken) > 256 {
		return invalid("page_token", "page token is too long")
	}
	return nil
}

// InstancePage is one page of instances.
type InstancePage struct {
	Instances     []Instance
	NextPageToken string
}

// Account is who the credential belongs to.
type Account struct {
	Name    string // the account's or user's name
	Company string
	Email   string
}

// Transfer is an instance's network transfer this billing month.
type Transfer struct {
	UsedBytes      int64
	AllowanceBytes int64 // 0 when the provider sets no allowance
}

// Features says which optional interfaces a driver implements; the host learns it over the wire.
type Features struct {
	IPv4Swap                bool
	IPv4SwapRequiresStopped bool
	ReverseDNS              bool
	MonthlyTransfer         bool
}

// FeaturesOf reports the optional interfaces d implements.
func FeaturesOf(d Driver) Features {
	var f Features
	if s, ok := d.(IPv4Swapper); ok {
		f.IPv4Swap = true
		f.IPv4SwapRequiresStopped = s.SwapIPv4RequiresStopped()
	}
	_, f.ReverseDNS = d.(ReverseDNSSetter)
	_, f.MonthlyTransfer = d.(TransferReporter)
	return f
}
