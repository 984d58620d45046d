package store

import (
	"regexp"
	"time"
)

// JoinStatus is where a join stands.
type JoinStatus string

const (
	JoinPending  JoinStatus = "pending"
	JoinApproved JoinStatus = "approved"
	JoinRejected JoinStatus = "rejected"
	JoinExpired  JoinStatus = "expired"
)

// JoinTTL is how long a pending join waits for an admin when the call names no TTL.
const JoinTTL = time.Hour

// Join is an enrolment request.
type Join struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	Key           string     `json:"key"`         // node-key:..., opaque here
	Fingerprint   string     `json:"fingerprint"` // SHA256:..., as OpenSSH prints it
	Addresses     []string   `json:"addresses"`
	SourceAddress string     `json:"source_address"`
	Status        JoinStatus `json:"status"`
	CreatedAt     time.Time  `json:"created_at"`
	ExpiresAt     time.Time  `json:"expires_at"`
	DecidedAt     time.Time  `json:"decided_at,omitzero"`
	DecidedBy     string     `json:"decided_by,omitempty"`
	NodeID        string     `json:"node_id,omitempty"` // once approved
	// ProvisioningID names the provisioning whose one-time token the join carried.
	ProvisioningID string `json:"provisioning_id,omitempty"`
	// HoldReason says why the plane left a provisioned join for a person instead of approving it.
	HoldReason string `json:"hold_reason,omitempty"`
}

type JoinCreateParams struct {
	Name          string   // the name the machine claims; a node's name once approved
	Key           string   // node-key:...
	Fingerprint   string   // SHA256:..., derived from Key by the caller
	Addresses     []string // what the machine says its addresses are
	SourceAddress string   // the address the request came from, for the per-source cap
	Now           time.Time
	TTL           time.Duration // 0: JoinTTL
	// Caps on pending joins; 0 means the default.
	MaxPending, MaxPendingPerSource int
}

type JoinCreateResult struct {
	Join    Join
	Renewed bool
}

type JoinGetParams struct {
	ID  string
	Now time.Time
}

type JoinListParams struct {
	Status JoinStatus // "" for all
	Limit  int        // 0: 100
	Cursor string     // NextCursor of the previous page
	Now    time.Time
}

type JoinListResult struct {
	Joins      []Join `json:"joins"`
	NextCursor string `json:"next_cursor,omitempty"` // "" on the last page
}

type JoinRenewParams struct {
	ID  string
	Now time.Time
	TTL time.Duration // 0: JoinTTL
}

type JoinApproveParams struct {
	ID          string
	Fingerprint string // as the admin typed it; must equal the join's exactly
	Name        string // "" keeps the claimed name
	By          string // who approved, for the record
	Now         time.Time
}

type JoinApproveResult struct {
	Join Join
	Node Node
}

type JoinRejectParams struct {
	ID  string
	By  string
	Now time.Time
}

type JoinExpireParams struct {
	Now time.Time
}

var (
	// Names are what operators type: a hostname's characters.
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
)

// ValidNodeName reports whether name can name a node (or a join).
func ValidNodeName(name string) bool { return nameRE.MatchString(name) }
