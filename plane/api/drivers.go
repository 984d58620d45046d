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
	// Code is "ok", or the error code the call ended with.
	Code       string `json:"code"`
	DurationMS int64  `json:"duration_ms"`
}

// DriverCallList is the answer of GET /drivers/audit, newest first.
type DriverCallList struct {
	Calls      []DriverCall `json:"calls"`
	NextCursor string       `json:"next_cursor,omitempty"`
}
