package sqlstore

import (
	"context"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// NodeCount counts in two statements, whatever the fleet's size: one pass over the nodes for the
// states, one grouped by agent version.
func (s *sqlStore) NodeCount(ctx context.Context, p NodeCountParams) (NodeCounts, error) {
	var c NodeCounts
	err := s.read(ctx, "count nodes", func(ex sqldb.Execer) error {
		var total, active, disconnected, left, silent, untrusted, below int64
		if err := ex.QueryRow(ctx, s.q.NodeCount, now(p.SilentBefore)).Scan(&total, &active, &disconnected, &left, &silent, &untrusted, &below); err != nil {
			return err
		}
		c = NodeCounts{Total: int(total), Active: int(active), Disconnected: int(disconnected), Left: int(left),
			Online: int(active - silent), Silent: int(silent), Untrusted: int(untrusted), BelowFloor: int(below), Versions: []VersionCount{}}
		rs, err := ex.Query(ctx, s.q.NodeCountVersions)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var v VersionCount
			var n int64
			if err := rs.Scan(&v.Version, &n); err != nil {
				return err
			}
			v.Nodes = int(n)
			c.Versions = append(c.Versions, v)
		}
		return rs.Err()
	})
	return c, err
}

// checkNodeFilter refuses a filter no node could match by its rules: a label is a valid key with a
// valid value, both or neither; a word or a version is short text.
func checkNodeFilter(f NodeFilter) error {
	if (f.LabelKey == "") != (f.LabelValue == "") {
		return invalid("label", "a label filter is key=value, both set")
	}
	if f.LabelKey != "" && (!ValidLabelKey(f.LabelKey) || !ValidLabelValue(f.LabelValue)) {
		return invalid("label", "%q=%q is not a label a node can carry", f.LabelKey, f.LabelValue)
	}
	if len(f.Word) > MaxRefLen || len(f.AgentVersion) > MaxRefLen || !ValidText(f.Word+f.AgentVersion) {
		return invalid("word", "a word or agent version filter is at most %d bytes of UTF-8 without NUL", MaxRefLen)
	}
	return nil
}
