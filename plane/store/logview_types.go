package store

import (
	"encoding/base64"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/channel"
)

// DetectorLogSplitView: an active node holds a checkpoint of a transparency log that another active
// node's checkpoint of that log contradicts: the same tree size with another root, or a pair of sizes
// the plane recorded as not proven one history (LogConsistencyRecord). The log shows different
// histories to different nodes. Cleared when no other node's view contradicts the node's.
const DetectorLogSplitView = "plane:log_split_view"

// MaxNodeCheckpoints bounds the checkpoints one node reports: one a log (registry/channel's cap).
const MaxNodeCheckpoints = channel.MaxCheckpoints

// NodeCheckpoint is a transparency-log checkpoint a node holds: its view of that log, as its last
// full report said.
type NodeCheckpoint struct {
	NodeID     string    `json:"node_id,omitempty"`
	NodeName   string    `json:"node_name,omitempty"`
	Origin     string    `json:"origin"`
	Size       int64     `json:"size"`
	RootHash   string    `json:"root_hash"` // standard base64 of 32 bytes, as a checkpoint writes it
	ReportedAt time.Time `json:"reported_at,omitzero"`
}

// ValidCheckpoint reports whether a node's checkpoint can be stored: an origin of 1 to MaxRefLen
// printable ASCII bytes without spaces, a positive size, and the canonical base64 of a 32-byte root.
func ValidCheckpoint(c NodeCheckpoint) bool {
	if c.Origin == "" || len(c.Origin) > MaxRefLen || c.Size < 1 {
		return false
	}
	for _, b := range []byte(c.Origin) {
		if b <= ' ' || b > '~' {
			return false
		}
	}
	h, err := base64.StdEncoding.DecodeString(c.RootHash)
	return err == nil && len(h) == 32 && base64.StdEncoding.EncodeToString(h) == c.RootHash
}

type NodeCheckpointListParams struct {
	// NodeID narrows the list to one node (whatever its state); "" lists every active node's.
	NodeID string
}

// LogTree is one tree of a log: its size and root hash.
type LogTree struct {
	Size     int64  `json:"size"`
	RootHash string `json:"root_hash"`
}

// LogConsistency is the plane's verdict on two checkpoints of one log, Old smaller than New: whether
// the log proved Old's tree a prefix of New's (RFC 6962 consistency). A proof that fails is a verdict
// (false); a log that could not be asked is none, and nothing is recorded.
type LogConsistency struct {
	Origin     string    `json:"origin"`
	Old        LogTree   `json:"old"`
	New        LogTree   `json:"new"`
	Consistent bool      `json:"consistent"`
	Detail     string    `json:"detail,omitempty"`
	CheckedAt  time.Time `json:"checked_at"`
}

type LogConsistencyRecordParams struct {
	Verdict LogConsistency // CheckedAt is set from Now
	Now     time.Time
}

type LogConsistencyListParams struct{}
