package api

import (
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// Token is the admin token a request was made with (GET /whoami). The token itself is never shown
// again after lexicon-plane token create.
type Token struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// TokenList is the answer of GET /tokens: every token, revoked ones too, never a secret or a hash.
type TokenList struct {
	Tokens []Token `json:"tokens"`
}

// TokenRequest is the body of POST /tokens.
type TokenRequest struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
}

// NewToken is the answer of POST /tokens: the token and its secret, which is shown this once; the
// plane keeps only its hash.
type NewToken struct {
	Token  Token  `json:"token"`
	Secret string `json:"secret"`
}

// JoinStatus is where a join request stands.
type JoinStatus string

const (
	JoinPending  JoinStatus = "pending"
	JoinApproved JoinStatus = "approved"
	JoinRejected JoinStatus = "rejected"
	JoinExpired  JoinStatus = "expired"
)

// Join is a machine's request to pair its key with the plane. An admin approves it after comparing
// Fingerprint with what the machine shows.
type Join struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	Key           string     `json:"key"`         // node-key:...
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

// JoinList is the answer of GET /joins.
type JoinList struct {
	Joins      []Join `json:"joins"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// ApproveRequest is the body of POST /joins/{id}/approve. Fingerprint must equal the join's exactly
// (join.fingerprint_mismatch otherwise); Name, when set, names the node instead of the claimed name.
type ApproveRequest struct {
	Fingerprint string `json:"fingerprint"`
	Name        string `json:"name,omitempty"`
}

// Approved is the answer of POST /joins/{id}/approve: the join and the node it made.
type Approved struct {
	Join Join `json:"join"`
	Node Node `json:"node"`
}

// NodeState is where a node's pairing stands. Only an active node is given jobs.
type NodeState string

const (
	NodeActive       NodeState = "active"
	NodeDisconnected NodeState = "disconnected"
	NodeLeft         NodeState = "left"
)

// Node is a paired machine and what it last reported of itself. Everything the node reported
// (AgentVersion, Vocabulary, Recipes, Untrusted) is its own word: show it as text.
type Node struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Key         string    `json:"key"`
	Fingerprint string    `json:"fingerprint"`
	Addresses   []string  `json:"addresses"`
	State       NodeState `json:"state"`
	CreatedAt   time.Time `json:"created_at"`
	LastSeenAt  time.Time `json:"last_seen_at,omitzero"`
	EndedAt     time.Time `json:"ended_at,omitzero"` // when it was disconnected or left

	AgentVersion      string    `json:"agent_version,omitempty"`
	StatementSequence int64     `json:"statement_sequence,omitempty"`
	StatementDigest   string    `json:"statement_digest,omitempty"`
	Vocabulary        []WordRef `json:"vocabulary"`
	// Recipes is the node's last recipe report, a JSON list of registry/channel.RecipeReport.
	Recipes      json.RawMessage `json:"recipes"`
	Idle         bool            `json:"idle"`
	ClaimSizeCap int64           `json:"claim_size_cap,omitempty"`
	// Untrusted is why the node could not verify the plane's statement; "" when it could.
	Untrusted string `json:"untrusted,omitempty"`
	// Refusals counts the jobs the node refused.
	Refusals int64 `json:"refusals"`

	Labels map[string]string `json:"labels"`
	// TargetSequence is the release the plane serves the node; a rollout moves it.
	TargetSequence int64 `json:"target_sequence"`
	// Leases are the node's live leases (GET /nodes/{id} only).
	Leases []Lease `json:"leases,omitempty"`
	// Update is where the node's self-update stands, as it reported it (state "" for an agent that
	// does not update itself), with the update history it reported.
	Update NodeUpdate `json:"update"`
	// ReleasesBehind counts the published releases that pin an agent newer than the one the node runs.
	ReleasesBehind int `json:"releases_behind"`
	// Updating says where the node's update to its target release's agent stands as the plane sees it:
	// "" when its agent is the one its target pins (or the target pins none, or the node refused it),
	// "in_progress" while the node is moving to it and reporting, "silent" when it has not reported
	// for UpdateSilentAfter since (an agent that exited to be restarted and was not). UpdatingTo is
	// that agent version. GET /nodes/{id} and GET /nodes both answer them.
	Updating   string `json:"updating,omitempty"`
	UpdatingTo string `json:"updating_to,omitempty"`
	// BelowFloor is set while the node's agent is below the floor of the statement it was offered: it
	// keeps its old vocabulary until it has updated itself, and jobs for words it does not hold yet are
	// refused with job.needs_newer_agent.
	BelowFloor bool `json:"below_floor"`
	// Checkpoints are the transparency-log checkpoints the node holds, as it reported them: its view
	// of each log (GET /nodes/{id} only).
	Checkpoints []Checkpoint `json:"checkpoints,omitempty"`
	// Facts are the host facts of the node's last full report (OS, kernel, CPU, memory, disk, boot
	// time, addresses, when the agent read them); absent for an agent that reports none. The node's
	// last report time is LastSeenAt.
	Facts *NodeFacts `json:"facts,omitempty"`
}

// Updating values.
const (
	UpdatingInProgress = "in_progress"
	UpdatingSilent     = "silent"
)

// UpdateSilentAfter is how long a node moving to a new agent may go without a report before the plane
// calls it silent since its update: a node reports at least every minute while it is up, and a
// supervised agent is back within seconds of exiting for its new binary.
const UpdateSilentAfter = 3 * time.Minute

// NodeFacts is what a node's agent read of its machine (registry/channel.HostFacts); its JSON keys
// are the fact keys a filter names (fact.os=debian-12).
type NodeFacts = channel.HostFacts

// Checkpoint is a log checkpoint a node holds: the log's origin, the tree size and its root hash
// (standard base64).
type Checkpoint struct {
	Origin     string    `json:"origin"`
	Size       int64     `json:"size"`
	RootHash   string    `json:"root_hash"`
	ReportedAt time.Time `json:"reported_at"`
}

// NodeUpdate is a node's report of its own update: state is one of none, current, pending, probing,
// trial, fetch_failed, verify_failed, probe_failed, rejected.
type NodeUpdate struct {
	State           string            `json:"state"`
	Offered         string            `json:"offered,omitempty"`
	Reason          string            `json:"reason,omitempty"`
	NeedsNewerAgent string            `json:"needs_newer_agent,omitempty"`
	History         []NodeUpdateEvent `json:"history,omitempty"`
}

// NodeUpdateEvent is one step of a node's update history (installed, accepted, rolled_back, refused,
// trial_restarted, abandoned).
type NodeUpdateEvent struct {
	At     time.Time `json:"at"`
	Event  string    `json:"event"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// WordRef is one word of a node's vocabulary.
type WordRef struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	Class   string `json:"class"`
	// NodeReach is the word's reach on the node as its policy narrows it (see Word.NodeReach); only
	// GET /nodes/{id} answers it, never the node list.
	NodeReach *NodeWordReach `json:"node_reach,omitempty"`
}

// Word is the answer of GET /nodes/{id}/words/{word}: the word as the node runs it (the module with
// Digest) and what its signed manifest says of it. Params is the manifest's JSON Schema of the params
// ({} when it takes none); the plane checks a job's params against it.
type Word struct {
	Name    string          `json:"name"`
	Version string          `json:"version"`
	Digest  string          `json:"digest"`
	Class   string          `json:"class"`
	Summary string          `json:"summary"`
	Params  json.RawMessage `json:"params"`
	// Reach is what the word may touch on any machine: each capability its signed manifest declares
	// with its bounds (roots, units, hosts, names, packages). "@self" in Hosts is a node's own names,
	// which its policy supplies.
	Reach []WordReach `json:"reach"`
	// NodeReach is what the word may touch on this node: the same capabilities as this node's policy
	// narrows them, as its agent computed and last reported them. Nil when the node reports none for
	// this module (an agent older than reach, or a report not yet sent since the word changed).
	NodeReach *NodeWordReach `json:"node_reach,omitempty"`
}

// NodeWordReach is a word's reach on one node.
type NodeWordReach struct {
	// Refused is why the node runs the word not at all (its policy refuses the word's class, or cannot
	// be trusted).
	Refused string      `json:"refused,omitempty"`
	Caps    []WordReach `json:"caps"`
}

// WordReach is one capability of a word with its bounds: as the signed manifest declares them (Reach),
// or as a node's policy narrows them (NodeReach). A pattern given as "x & y" must match both.
type WordReach struct {
	Cap      string   `json:"cap"`
	Roots    []string `json:"roots,omitempty"`
	Units    []string `json:"units,omitempty"`
	Hosts    []string `json:"hosts,omitempty"`
	Names    []string `json:"names,omitempty"`
	Packages []string `json:"packages,omitempty"`
	Origins  []string `json:"origins,omitempty"`
	Programs []string `json:"programs,omitempty"`
	// Narrowed is true when the node's policy bounds this capability (NodeReach only).
	Narrowed bool `json:"narrowed,omitempty"`
	// Denied is why the node's policy leaves this capability nothing (NodeReach only).
	Denied string `json:"denied,omitempty"`
	// Note is what else bounds it on the node (NodeReach only).
	Note string `json:"note,omitempty"`
}

// Fleet is the answer of GET /fleet: the nodes counted by state, and the active ones by liveness,
// trust, update floor and agent version, without listing them.
type Fleet struct {
	Total        int `json:"total"`
	Active       int `json:"active"`
	Disconnected int `json:"disconnected"`
	Left         int `json:"left"`
	// Online and Silent add up to Active: Silent were not seen for SilentAfterSeconds.
	Online             int            `json:"online"`
	Silent             int            `json:"silent"`
	SilentAfterSeconds int64          `json:"silent_after_seconds"`
	Untrusted          int            `json:"untrusted"`
	BelowFloor         int            `json:"below_floor"`
	Versions           []VersionCount `json:"versions"` // by version; "" for nodes that report none
	// TargetSequence is the fleet's target release: what new nodes are given and release rollouts
	// move nodes to (0 before any is published). Not necessarily the newest published.
	TargetSequence int64 `json:"target_sequence"`
}

// VersionCount is how many active nodes run one agent version.
type VersionCount struct {
	Version string `json:"version"`
	Nodes   int    `json:"nodes"`
}

// NodeList is the answer of GET /nodes.
type NodeList struct {
	Nodes      []Node `json:"nodes"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// Disconnected is the answer of POST /nodes/{id}/disconnect: the node, its queued jobs (now
// cancelled) and its running job (now lost).
type Disconnected struct {
	Node      Node  `json:"node"`
	Cancelled []Job `json:"cancelled"`
	Lost      []Job `json:"lost"`
}
