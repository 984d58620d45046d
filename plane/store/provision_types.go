package store

import "time"

// ProvisioningState is where a provisioning stands. It moves forward only: creating (the driver is
// asked for the instance), booting (the instance exists; waiting for the provider to report it
// running), installing (running; cloud-init fetches and installs the agent, which joins with the
// token), joining (a join used the token; the plane checks it with the provider), joined (the join is
// approved and the node exists). Any step that fails or times out moves to failed, and once the
// instance it created is deleted, to cleaned_up.
type ProvisioningState string

const (
	ProvCreating   ProvisioningState = "creating"
	ProvBooting    ProvisioningState = "booting"
	ProvInstalling ProvisioningState = "installing"
	ProvJoining    ProvisioningState = "joining"
	ProvJoined     ProvisioningState = "joined"
	ProvFailed     ProvisioningState = "failed"
	ProvCleanedUp  ProvisioningState = "cleaned_up"
)

// Live reports whether the provisioning is still under way (it holds its name).
func (s ProvisioningState) Live() bool {
	switch s {
	case ProvCreating, ProvBooting, ProvInstalling, ProvJoining:
		return true
	}
	return false
}

// ValidProvisioningState reports whether s is one of the states.
func ValidProvisioningState(s ProvisioningState) bool {
	return s.Live() || s == ProvJoined || s == ProvFailed || s == ProvCleanedUp
}

// Cleanup outcomes of a failed provisioning's instance.
const (
	CleanupNone    = ""        // nothing to clean (yet)
	CleanupDeleted = "deleted" // the instance it created was deleted
	CleanupFailed  = "failed"  // deleting it failed; the engine retries and an incident is open
)

// DetectorMachineTransfer: a joined provisioning's instance used 80% or more of its monthly transfer
// allowance (subject provisioning:<id>); cleared when a new month's figure is below it.
const DetectorMachineTransfer = "plane:machine_transfer"

// DetectorProvisioningOrphan: a failed provisioning could not delete the instance it created (subject
// provisioning:<id>); cleared once the instance is deleted.
const DetectorProvisioningOrphan = "plane:provisioning_orphan"

// Provisioning is one machine being made by a cloud driver and joined to the plane. Its token's hash
// is never returned.
type Provisioning struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Account    string            `json:"account"`
	Region     string            `json:"region"`
	Type       string            `json:"type"`
	Image      string            `json:"image"`
	Platform   string            `json:"platform"` // the agent's os-arch, e.g. linux-amd64
	Labels     map[string]string `json:"labels,omitempty"`
	DNSAccount string            `json:"dns_account,omitempty"`
	DNSZone    string            `json:"dns_zone,omitempty"`
	// Tag marks the instance as this provisioning's: cleanup deletes only an instance carrying it.
	Tag     string            `json:"tag"`
	State   ProvisioningState `json:"state"`
	StateAt time.Time         `json:"state_at"` // when it entered State: its timeout counts from here
	// InstanceID is the provider's id once the instance is created.
	InstanceID string `json:"instance_id,omitempty"`
	// Addresses are what the provider reports for the instance (never what the machine says).
	Addresses      []string  `json:"addresses,omitempty"`
	TokenExpiresAt time.Time `json:"token_expires_at,omitzero"`
	TokenUsedAt    time.Time `json:"token_used_at,omitzero"`
	JoinID         string    `json:"join_id,omitempty"`
	NodeID         string    `json:"node_id,omitempty"`
	// Reason says why it failed, or why its join waits for a person.
	Reason     string    `json:"reason,omitempty"`
	Cleanup    string    `json:"cleanup,omitempty"` // CleanupNone, CleanupDeleted, CleanupFailed
	CleanupAt  time.Time `json:"cleanup_at,omitzero"`
	CreatedBy  string    `json:"created_by"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// The instance's transfer this month, as the provider last reported it (joined only; zero
	// allowance: none reported).
	TransferUsed      int64     `json:"transfer_used,omitempty"`
	TransferAllowance int64     `json:"transfer_allowance,omitempty"`
	TransferAt        time.Time `json:"transfer_at,omitzero"`
	// Events is the record's timeline, oldest first (ProvisioningGet only).
	Events []ProvisioningEvent `json:"events,omitempty"`
}

// ProvisioningEvent is one entry of a provisioning's timeline.
type ProvisioningEvent struct {
	At     time.Time         `json:"at"`
	Actor  string            `json:"actor"`
	State  ProvisioningState `json:"state"`
	Detail string            `json:"detail"`
}

// DefaultPlatform is the agent platform of a provisioning that names none.
const DefaultPlatform = "linux-amd64"

// MaxProvisioningDetail caps a reason or an event's detail.
const MaxProvisioningDetail = 1024

type ProvisioningCreateParams struct {
	Name, Account, Region, Type, Image string
	Platform                           string // "": linux-amd64
	Labels                             map[string]string
	DNSAccount, DNSZone                string
	By                                 string
	Now                                time.Time
}

type ProvisioningGetParams struct {
	ID string
}

type ProvisioningListParams struct {
	// Open: only those the engine still has work on (live, or failed with an instance not yet
	// deleted).
	Open  bool
	State ProvisioningState // "" for every state
	Limit int               // 0: 100
}

type ProvisioningTransferParams struct {
	ID              string
	Used, Allowance int64
	Now             time.Time
}

// ProvisioningUpdateParams moves a provisioning from From to To (they may be equal) and sets the
// fields given; a zero field keeps what the record holds. Nothing moves unless the record is in From.
type ProvisioningUpdateParams struct {
	ID   string
	From ProvisioningState
	To   ProvisioningState
	// Set, when not zero.
	InstanceID     string
	Addresses      []string
	TokenHash      string // lowercase hex sha256 of a fresh token's text
	TokenExpiresAt time.Time
	JoinID, NodeID string
	Reason         string
	Cleanup        string
	CleanupAt      time.Time
	// Detail is the timeline entry this change writes ("" writes none).
	Detail string
	By     string
	Now    time.Time
}

type ProvisioningUpdateResult struct {
	Provisioning Provisioning
	// Moved is false when the record was not in From (another replica moved it first): nothing
	// changed.
	Moved bool
}

type ProvisioningTokenParams struct {
	TokenHash string
	// JoinID, for ProvisioningTokenUse: the join the token is spent on.
	JoinID string
	Now    time.Time
}

type JoinHoldParams struct {
	ID             string
	ProvisioningID string
	Reason         string
}

type ProvisioningAdoptParams struct {
	Account, InstanceID, NodeID string
	Addresses                   []string
	By                          string
	Now                         time.Time
}
