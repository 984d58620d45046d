package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"

	. "github.com/lexicon-fleet/lexicon/plane/store"
)

// checkNodeCheckpoints holds a report's checkpoints to the caps: one a log, each ValidCheckpoint.
func checkNodeCheckpoints(cps []NodeCheckpoint) error {
	if len(cps) > MaxNodeCheckpoints {
		return invalid("checkpoints", "%d checkpoints, at most %d", len(cps), MaxNodeCheckpoints)
	}
	seen := map[string]bool{}
	for _, c := range cps {
		if !ValidCheckpoint(c) {
			return invalid("checkpoints", "a checkpoint is an origin of printable ASCII, a positive size and a base64 root of 32 bytes")
		}
		if seen[c.Origin] {
			return invalid("checkpoints", "log %s is reported twice", c.Origin)
		}
		seen[c.Origin] = true
	}
	return nil
}

// checkpointSteps are NodeReport's steps replacing the node's checkpoints: always the same two, so
// the pipeline has one shape whatever a node holds.
func (s *sqlStore) checkpointSteps(p NodeReportParams) []sqldb.Step {
	type row struct {
		Origin   string `json:"origin"`
		Size     int64  `json:"size"`
		RootHash string `json:"root_hash"`
	}
	rows := make([]row, len(p.Checkpoints))
	for i, c := range p.Checkpoints {
		rows[i] = row{c.Origin, c.Size, c.RootHash}
	}
	data, _ := json.Marshal(rows)
	return []sqldb.Step{
		{Query: s.q.NodeCheckpointsClear, Args: []any{p.ID}},
		{Query: s.q.NodeCheckpointsInsert, Args: []any{p.ID, string(data), now(p.Now)}},
	}
}

func (s *sqlStore) NodeCheckpointList(ctx context.Context, p NodeCheckpointListParams) ([]NodeCheckpoint, error) {
	if len(p.NodeID) > 64 {
		return nil, invalid("node_id", "node_id must be an id")
	}
	out := []NodeCheckpoint{}
	err := s.read(ctx, "list node checkpoints", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.NodeCheckpointList, p.NodeID)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var c NodeCheckpoint
			if err := rs.Scan(&c.NodeID, &c.NodeName, &c.Origin, &c.Size, &c.RootHash, stamp{&c.ReportedAt}); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rs.Err()
	})
	return out, err
}

func (s *sqlStore) LogConsistencyRecord(ctx context.Context, p LogConsistencyRecordParams) error {
	v := p.Verdict
	switch {
	case !ValidCheckpoint(NodeCheckpoint{Origin: v.Origin, Size: v.Old.Size, RootHash: v.Old.RootHash}),
		!ValidCheckpoint(NodeCheckpoint{Origin: v.Origin, Size: v.New.Size, RootHash: v.New.RootHash}):
		return invalid("verdict", "a verdict names two valid checkpoints of one log")
	case v.Old.Size >= v.New.Size:
		return invalid("verdict", "a verdict's old tree is the smaller")
	case len(v.Detail) > MaxMessageLen || !ValidText(v.Detail):
		return invalid("detail", "detail is at most %d bytes of UTF-8 without NUL", MaxMessageLen)
	}
	return s.pipeline(ctx, "record log consistency",
		sqldb.Step{Query: s.q.LogConsistencyUpsert, Args: []any{v.Origin, v.Old.Size, v.Old.RootHash, v.New.Size, v.New.RootHash,
			v.Consistent, v.Detail, now(p.Now)}},
		sqldb.Step{Query: s.q.LogConsistencyPrune})
}

func (s *sqlStore) LogConsistencyList(ctx context.Context, _ LogConsistencyListParams) ([]LogConsistency, error) {
	out := []LogConsistency{}
	err := s.read(ctx, "list log consistency", func(ex sqldb.Execer) error {
		rs, err := ex.Query(ctx, s.q.LogConsistencyList)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var v LogConsistency
			if err := rs.Scan(&v.Origin, &v.Old.Size, &v.Old.RootHash, &v.New.Size, &v.New.RootHash, &v.Consistent, &v.Detail,
				stamp{&v.CheckedAt}); err != nil {
				return err
			}
			out = append(out, v)
		}
		return rs.Err()
	})
	return out, err
}

// logSplitDetector finds nodes whose view of a log another node's contradicts. A node contradicted by
// several views is named against the first, in order.
func (s *sqlStore) logSplitDetector() detector {
	return detector{
		source: DetectorLogSplitView, severity: SeverityCritical,
		cleared: "no other node's view of the log contradicts this node's",
		find: onNodes(func(ctx context.Context, ex sqldb.Execer) (map[string]finding, error) {
			rs, err := ex.Query(ctx, s.q.DetectLogSplit)
			if err != nil {
				return nil, err
			}
			defer rs.Close()
			out := map[string]finding{}
			for rs.Next() {
				var id, origin, root, otherRoot string
				var size, otherSize int64
				var other *string
				if err := rs.Scan(&id, &origin, &size, &root, &otherSize, &otherRoot, &other); err != nil {
					return nil, err
				}
				if _, ok := out[id]; ok {
					continue
				}
				name := "another node"
				if other != nil {
					name = *other
				}
				why := "another root for the same tree size"
				if size != otherSize {
					why = "the log did not prove the two one history"
				}
				out[id] = finding{summary: fmt.Sprintf("log %s shows this node another history than %s: this node holds size %d, root %s; %s holds size %d, root %s (%s)",
					origin, name, size, root, name, otherSize, otherRoot, why)}
			}
			return out, rs.Err()
		}),
	}
}
