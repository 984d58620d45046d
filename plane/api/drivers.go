package api

import (
	"encoding/json"
	"time"
)

// Driver is a driver as `lexicon drivers list` shows it: what the current release pins and whether an
// admin enabled it.
type Driver struct {
	Name     string `json:"name"` // <class>-<name>: "dns-memory"
	Kind     string `json:"kind,omitempty"`
	Version  string `json:"version,omitempty"`
	Summary  string `json:"summary,omitempty"`
	Platform string `json:"platform,omitempty"`
	Digest   string `json:"digest,omitempty"` // the executable the current release pins
	// Pinned says the current release pins it for this plane's platform; only then can it run.
	Pinned    bool      `json:"pinned"`
	Enabled   bool      `json:"enabled"`
	ChangedAt time.Time `json:"changed_at,omitzero"`
	ChangedBy string    `json:"changed_by,omitempty"`
	// Unconfined is the consent the admin gave when enabling it to run it where no protection of the
	// plane's files can be applied.
	Unconfined bool `json:"unconfined,omitempty"`
}

// DriverEnable is the body of POST /drivers/{name}/enable; an empty body is the zero value.
type DriverEnable struct {
	// Unconfined accepts running the driver where none of its protections (own user, Landlock) can be
	// applied, so that it could read the plane's files. Without it such an enable answers
	// driver.unconfined and changes nothing. The consent is stored with the driver and recorded in the
	// audit log (target "unconfined").
	Unconfined bool `json:"unconfined,omitempty"`
}

// DriverSchema is the answer of GET /drivers/{name}/schema: the JSON Schema of the settings of an
// account of the driver (a closed object). The credential is not in it: it is AccountAdd's own field.
type DriverSchema struct {
	Name    string          `json:"name"`
	Kind    string          `json:"kind"`
	Version string          `json:"version,omitempty"`
	Digest  string          `json:"digest"` // the executable that answered
	Schema  json.RawMessage `json:"schema"`
}

// DriverList is the answer of GET /drivers.
type DriverList struct {
	Release  string   `json:"release,omitempty"`
	Sequence int64    `json:"sequence"`
	Drivers  []Driver `json:"drivers"`
}

// Status is a driver's processes on one replica (`lexicon drivers status`).
type Status struct {
	Name    string `json:"name"`
	Replica string `json:"replica"`
	Enabled bool   `json:"enabled"`
	Pinned  bool   `json:"pinned"`
	Kind    string `json:"kind,omitempty"`
	Version string `json:"version,omitempty"`
	Digest  string `json:"digest,omitempty"` // what runs
	// State is running, restarting (after a crash), failed (it would not start: LastError says why),
	// stopped (not running on this replica) or disabled.
	State     string `json:"state"`
	PID       int    `json:"pid,omitempty"`
	Restarts  int    `json:"restarts"`
	LastError string `json:"last_error,omitempty"`
	// Protections lists what confines the driver's processes on this replica: user:<name>,
	// landlock:v<abi>, no_new_privs, or unconfined alone.
	Protections []string      `json:"protections,omitempty"`
	Accounts    []ProcessInfo `json:"accounts"`
}

// ProcessInfo is the process serving one account.
type ProcessInfo struct {
	Account   string `json:"account"`
	State     string `json:"state"`
	PID       int    `json:"pid,omitempty"`
	Restarts  int    `json:"restarts"`
	LastError string `json:"last_error,omitempty"`
}

// StatusList is the answer of GET /drivers/status.
type StatusList struct {
	Replica string   `json:"replica"`
	Drivers []Status `json:"drivers"`
}

// AccountAdd is the body of POST /accounts. The credential travels only here, in a request body over
// TLS; the plane seals it before storing it and never answers with it.
type AccountAdd struct {
	Driver     string          `json:"driver"`
	Name       string          `json:"name"`
	Settings   json.RawMessage `json:"settings,omitempty"`
	Credential string          `json:"credential"`
	// Test marks an account of throwaway instances: automation may delete what it did not tag there.
	Test bool `json:"test,omitempty"`
}

// AccountTest is the body of POST /accounts/{name}/test.
type AccountTest struct {
	Test bool `json:"test"`
}

// Record is a DNS record on the wire: TTL in whole seconds.
type Record struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Name     string `json:"name"`
	Value    string `json:"value"`
	TTL      int64  `json:"ttl,omitempty"`
	Priority uint16 `json:"priority,omitempty"`
}

// RecordsFile is what `lexicon dns reconcile --records-file` reads and the body of a reconcile.
type RecordsFile struct {
	Records []Record `json:"records"`
}

// Reconcile is the body of POST /dns/{account}/zones/{zone}/reconcile.
type Reconcile struct {
	Records []Record `json:"records"`
	DryRun  bool     `json:"dry_run,omitempty"`
}

// ReconcileReport says what an additive reconcile did: the records it created (would create, in a dry
// run), the ones already present, and each conflict it left alone.
type ReconcileReport struct {
	Account   string     `json:"account"`
	Zone      string     `json:"zone"`
	DryRun    bool       `json:"dry_run"`
	Created   []Record   `json:"created"`
	Present   []Record   `json:"present"`
	Conflicts []Conflict `json:"conflicts"`
}

// Conflict is a wanted record the reconciler did not create because the zone holds other records it
// must not touch.
type Conflict struct {
	Record   Record   `json:"record"`
	Existing []Record `json:"existing"`
	Reason   string   `json:"reason"`
}

// Zone is a DNS zone.
type Zone struct {
	Name string `json:"name"`
}

// Region is a cloud region.
type Region struct {
	ID      string `json:"id"`
	Label   string `json:"label,omitempty"`
	Country string `json:"country,omitempty"`
}

// InstanceType is a cloud instance size.
type InstanceType struct {
	ID        string `json:"id"`
	Label     string `json:"label,omitempty"`
	VCPUs     int    `json:"vcpus"`
	MemoryMiB int64  `json:"memory_mib"`
	DiskGiB   int64  `json:"disk_gib"`
}

// Instance is a cloud instance.
type Instance struct {
	ID      string    `json:"id"`
	Label   string    `json:"label,omitempty"`
	Region  string    `json:"region,omitempty"`
	Type    string    `json:"type,omitempty"`
	Image   string    `json:"image,omitempty"`
	Status  string    `json:"status"`
	IPv4    []string  `json:"ipv4,omitempty"`
	IPv6    []string  `json:"ipv6,omitempty"`
	Tags    []string  `json:"tags,omitempty"`
	Created time.Time `json:"created,omitzero"`
}

// InstancePage is one page of instances.
type InstancePage struct {
	Instances     []Instance `json:"instances"`
	NextPageToken string     `json:"next_page_token,omitempty"`
}

// MaxUserData is the most user data a create may carry: sdk/driver/cloud's MaxUserDataLen, which a
// client of this package (the CLI) must not link, since it brings go-plugin; a drivers test holds the
// two equal.
const MaxUserData = 16 << 10

// CloudCreateRequest is the body of POST /cloud/{account}/instances. UserData is cloud-init user data
// as text (the driver encodes it as its provider wants), at most MaxUserData bytes; Tags are what
// automation finds its instances by.
type CloudCreateRequest struct {
	Region         string   `json:"region"`
	Type           string   `json:"type"`
	Image          string   `json:"image"`
	Label          string   `json:"label"`
	Tags           []string `json:"tags,omitempty"`
	SSHKeys        []string `json:"ssh_keys,omitempty"`
	UserData       string   `json:"user_data,omitempty"`
	DiskEncryption string   `json:"disk_encryption,omitempty"` // "", "enabled" or "disabled"
}

// CloudDeleteRequest is the body of POST /cloud/{account}/instances/{id}/delete: the instance's label,
// typed back.
type CloudDeleteRequest struct {
	Confirm string `json:"confirm"`
}

// SwapIPv4Request is the body of POST /cloud/{account}/swap-ipv4.
type SwapIPv4Request struct {
	A string `json:"a"`
	B string `json:"b"`
}

// ReverseDNSRequest is the body of POST /cloud/{account}/instances/{id}/reverse-dns.
type ReverseDNSRequest struct {
	IP       string `json:"ip"`
	Hostname string `json:"hostname"`
}

// CloudAccepted says the provider accepted a request; the instance changes state after (read it back
// with GET /cloud/{account}/instances/{id}).
type CloudAccepted struct {
	Account   string   `json:"account"`
	Operation string   `json:"operation"` // the audit log's name: "cloud.power_on", ...
	Instances []string `json:"instances"`
}

// Transfer is an instance's network transfer this billing month.
type Transfer struct {
	Account        string `json:"account"`
	Instance       string `json:"instance"`
	UsedBytes      int64  `json:"used_bytes"`
	AllowanceBytes int64  `json:"allowance_bytes"` // 0: the provider sets no allowance
}

// CloudFeatures are the optional features of an account's driver.
type CloudFeatures struct {
	IPv4Swap                bool `json:"ipv4_swap"`
	IPv4SwapRequiresStopped bool `json:"ipv4_swap_requires_stopped"`
	ReverseDNS              bool `json:"reverse_dns"`
	MonthlyTransfer         bool `json:"monthly_transfer"`
}

// CloudAccountInfo is the answer of GET /cloud/{account}/account: who the credential belongs to as the
// provider says, and what the plane knows of the account.
type CloudAccountInfo struct {
	Account  string        `json:"account"`
	Driver   string        `json:"driver"`
	Test     bool          `json:"test"`
	Name     string        `json:"name"`
	Company  string        `json:"company,omitempty"`
	Email    string        `json:"email,omitempty"`
	Features CloudFeatures `json:"features"`
}

// ZoneList is the answer of GET /dns/{account}/zones.
type ZoneList struct {
	Zones []Zone `json:"zones"`
}

// RecordList is the answer of GET /dns/{account}/zones/{zone}/records.
type RecordList struct {
	Records []Record `json:"records"`
}

// RegionList is the answer of GET /cloud/{account}/regions.
type RegionList struct {
	Regions []Region `json:"regions"`
}

// TypeList is the answer of GET /cloud/{account}/regions/{region}/types.
type TypeList struct {
	Types []InstanceType `json:"types"`
}

// Account is a driver account: its settings and which master key sealed its credential. The credential
// itself never leaves the plane.
type Account struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Driver    string          `json:"driver"`
	Settings  json.RawMessage `json:"settings"`
	KeyID     string          `json:"key_id"`
	CreatedAt time.Time       `json:"created_at"`
	CreatedBy string          `json:"created_by"`
	Test      bool            `json:"test"`
}

// AccountList is the answer of GET /accounts.
type AccountList struct {
	Accounts []Account `json:"accounts"`
}

// DriverCall is one audited call to a driver: who asked, for which account, and how it ended.
type DriverCall struct {
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	Actor     string    `json:"actor"`
	Account   string    `json:"account,omitempty"`
	Driver    string    `json:"driver"`
	Operation string    `json:"operation"` // "dns.get_records", "cloud.regions", "driver.enable", ...
	// Target is the zone, region or instance the call was about; "unconfined" on a driver.enable that
	// accepted running the driver unconfined.
	Target string `json:"target,omitempty"`
	// Code is "ok", the error code the call ended with, or "pending" from before the driver was asked
	// until the outcome is written (one left pending: the plane stopped mid-call).
	Code       string `json:"code"`
	DurationMS int64  `json:"duration_ms"`
}

// DriverCallPending is a DriverCall's code from before the driver is asked until its outcome is
// written; one that stays pending was cut short by the plane stopping.
const DriverCallPending = "pending"

// DriverCallList is the answer of GET /drivers/audit, newest first.
type DriverCallList struct {
	Calls      []DriverCall `json:"calls"`
	NextCursor string       `json:"next_cursor,omitempty"`
}
