package store

import (
	"encoding/json"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// NodeState is where a pairing stands. Only active nodes are served; the other two are final.
type NodeState string

const (
	NodeActive       NodeState = "active"
	NodeDisconnected NodeState = "disconnected"
	NodeLeft         NodeState = "left"
)

// MaxRefLen bounds a name, version, digest or code a claim reports.
const MaxRefLen = 255

// Node is an enrolled machine.
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

	// What the last claim reported.
	AgentVersion      string          `json:"agent_version,omitempty"`
	StatementSequence int64           `json:"statement_sequence,omitempty"`
	StatementDigest   string          `json:"statement_digest,omitempty"`
	Vocabulary        []WordRef       `json:"vocabulary"`
	Recipes           json.RawMessage `json:"recipes"`
	Idle              bool            `json:"idle"`
	ClaimSizeCap      int64           `json:"claim_size_cap,omitempty"`
	// Untrusted is why the node could not verify the plane's statement or some of its modules, in the
	// node's own words; "" when it could. The plane:untrusted_release detector reads it.
	Untrusted string `json:"untrusted,omitempty"`
	// ReportDigest is the node's digest of the report it last sent in full, "" if it sent none; a
	// claim naming the same digest need not be written again (registry/channel.ClaimRequest).
	ReportDigest string `json:"report_digest,omitempty"`

	// Refusals counts jobs this node answered with the outcome refused.
	Refusals int64 `json:"refusals"`

	// Labels group nodes for rollouts (role=web, zone=a); an operator sets them.
	Labels map[string]string `json:"labels"`
	// TargetSequence is the release the plane serves this node (0: none is published yet). Publishing
	// does not move it; a rollout does.
	TargetSequence int64 `json:"target_sequence"`

	// Update is where the node's self-update stands, as its last claim reported it; State is "" for an
	// agent that does not update itself.
	Update NodeUpdate `json:"update"`

	// Facts are the host facts of the node's last full report; zero (CollectedAt zero) for an agent
	// that reports none.
	Facts NodeFacts `json:"facts"`
}

// NodeFacts is a node's report of its machine, in the channel's form: its JSON keys are the fact keys
// filters name, the same in the store's column.
type NodeFacts = channel.HostFacts

// UpdateStates is the closed set a node may report (registry/channel's); anything else is refused on
// intake.
var UpdateStates = channel.UpdateStates

// MaxUpdateHistory bounds the update events kept per node: what a claim may carry.
const MaxUpdateHistory = channel.MaxUpdateHistory

// NodeUpdate is a node's report of its own update.
type NodeUpdate struct {
	State   string `json:"state"`
	Offered string `json:"offered,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// NeedsNewerAgent is the floor the node's agent is below: it keeps its vocabulary until it has
	// updated itself.
	NeedsNewerAgent string            `json:"needs_newer_agent,omitempty"`
	History         []NodeUpdateEvent `json:"history,omitempty"`
}

// NodeUpdateEvent is one step of a node's update history.
type NodeUpdateEvent struct {
	At     time.Time `json:"at"`
	Event  string    `json:"event"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// WordRef is a word as a node reports it: the words of the newest statement it verified. Class is what
// the node says; authorise by the class in the release's manifest.
type WordRef struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	Class   string `json:"class"`
}

// Word returns the node's word of that name.
func (n Node) Word(name string) (WordRef, bool) {
	for _, w := range n.Vocabulary {
		if w.Name == name {
			return w, true
		}
	}
	return WordRef{}, false
}

type NodeGetParams struct {
	ID   string // by id...
	Name string // ...or the active node of this name; set exactly one
}

type NodeGetByKeyParams struct {
	Fingerprint string // SHA256:...; the keyid of the channel's signatures
}

type NodeListParams struct {
	State  NodeState // "" for all
	Limit  int       // 0: 100
	Cursor string
	Filter NodeFilter
}

type NodeListResult struct {
	Nodes      []Node `json:"nodes"`
	NextCursor string `json:"next_cursor,omitempty"` // "" on the last page
}

type NodeReportParams struct {
	ID                string
	Now               time.Time
	AgentVersion      string
	StatementSequence int64
	StatementDigest   string
	Vocabulary        []WordRef
	Recipes           json.RawMessage // a JSON array; nil for none
	Idle              bool
	ClaimSizeCap      int64
	// Untrusted is the node's reason for distrusting the plane's statement, "" when it trusts it. Each
	// report replaces the last, so a caller that leaves it empty records a node that trusts.
	Untrusted string
	// ReportDigest is the node's digest of this report, "" from an agent that sends none.
	ReportDigest string
	// Update is where the node's self-update stands; the zero value records an agent that reports
	// none. Each report replaces the last, like Untrusted.
	Update NodeUpdate
	// Checkpoints are the log checkpoints the node holds (NodeID, NodeName and ReportedAt are not
	// read); each report replaces the node's set, nil clearing it.
	Checkpoints []NodeCheckpoint
	// Facts are the node's host facts, each text at most channel.MaxFactText bytes and at most
	// channel.MaxFactAddresses addresses; each report replaces them, the zero value recording none.
	Facts NodeFacts
	// Reach is each word's reach (channel.WordReach) within the channel's caps (MaxReachWords words,
	// MaxReachCaps capabilities a word, MaxReachList entries a list, MaxReachText bytes a text); each
	// report replaces it, nil recording none.
	Reach []WordReach
}

// WordReach is one word's capabilities as the node's policy narrows them, in the channel's form.
type WordReach = channel.WordReach

// NodeReachGetParams names the node whose reach NodeReachGet answers.
type NodeReachGetParams struct {
	ID string
}

type NodeSeenParams struct {
	ID   string
	Now  time.Time
	Idle bool
}

type NodeEndParams struct {
	ID  string
	By  string // who disconnected it ("" for the node itself)
	Now time.Time
}

type NodeEndResult struct {
	Node      Node
	Cancelled []Job // queued jobs, now cancelled
	Lost      []Job // the running job, now lost
}

// Label bounds: keys are lowercase names (ValidLabelKey), values printable text of at most
// MaxLabelValue bytes without commas or '=' (a selector's separators), and a node has at most MaxLabels.
const (
	MaxLabels     = 32
	MaxLabelValue = 63
)

// ValidLabelKey reports whether k can be a label key: 1 to 63 of a-z, 0-9, '-', '_', '.', '/', starting
// with a letter.
func ValidLabelKey(k string) bool {
	if k == "" || len(k) > 63 || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for _, c := range []byte(k) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}

// ValidLabelValue reports whether v can be a label value: 1 to MaxLabelValue printable ASCII bytes
// other than ',', '=' and space.
func ValidLabelValue(v string) bool {
	if v == "" || len(v) > MaxLabelValue {
		return false
	}
	for _, c := range []byte(v) {
		if c <= ' ' || c > '~' || c == ',' || c == '=' {
			return false
		}
	}
	return true
}

type NodeLabelParams struct {
	ID     string
	Set    map[string]string // labels to set (replacing a value a key had)
	Remove []string          // keys to remove
	By     string
	Now    time.Time
}

type NodeTargetSetParams struct {
	ID       string
	Sequence int64 // a stored release
	Now      time.Time
}

// NodeTargetSetResult is the node after the move and the target it had before.
type NodeTargetSetResult struct {
	Node     Node
	Previous int64
}

type FleetTargetSetParams struct {
	Sequence int64
	By       string
	Now      time.Time
}
