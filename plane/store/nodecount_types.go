package store

import "time"

// NodeCountParams says when an active node counts as silent.
type NodeCountParams struct {
	// SilentBefore: an active node not seen since before it (or never) is silent.
	SilentBefore time.Time
}

// NodeCounts is the fleet at a glance, counted by the database rather than by listing every node.
type NodeCounts struct {
	Total, Active, Disconnected, Left int
	// Among active nodes: Online and Silent add up to Active; Untrusted could not verify the plane's
	// statement; BelowFloor runs an agent below the floor of the statement it was offered.
	Online, Silent, Untrusted, BelowFloor int
	// Versions counts active nodes by the agent version they report ("" for none), by version.
	Versions []VersionCount
}

// VersionCount is how many active nodes report one agent version.
type VersionCount struct {
	Version string
	Nodes   int
}

// NodeFilter narrows NodeList beyond its state; an empty field does not filter.
type NodeFilter struct {
	LabelKey, LabelValue string // the node carries this label (both or neither)
	Word                 string // the node's vocabulary holds a word of this name
	AgentVersion         string // the node reports exactly this agent version
}

// IsZero reports whether the filter filters nothing.
func (f NodeFilter) IsZero() bool { return f == NodeFilter{} }

// DefaultSilentAfter is how long an active node may go unseen before it counts as silent: the
// silent-agent incident's default, so the overview's count and the inbox agree.
const DefaultSilentAfter = 10 * time.Minute
