-- name: NodeCheckpointsClear
-- Run in NodeReport's pipeline: a report replaces the node's checkpoints.
DELETE FROM node_checkpoints WHERE node_id = $1 AND EXISTS (SELECT 1 FROM nodes WHERE id = $1 AND state = 'active')

-- name: NodeCheckpointsInsert
-- $2: the checkpoints as a JSON array of {origin, size, root_hash}, checked by the caller.
INSERT INTO node_checkpoints (node_id, origin, size, root_hash, reported_at)
SELECT $1, e->>'origin', (e->>'size')::bigint, e->>'root_hash', $3
FROM jsonb_array_elements($2::jsonb) e
WHERE EXISTS (SELECT 1 FROM nodes WHERE id = $1 AND state = 'active')

-- name: NodeCheckpointList
SELECT c.node_id, n.name, c.origin, c.size, c.root_hash, c.reported_at
FROM node_checkpoints c JOIN nodes n ON n.id = c.node_id
WHERE ($1 = '' AND n.state = 'active') OR c.node_id = $1
ORDER BY c.node_id, c.origin

-- name: LogConsistencyUpsert
INSERT INTO log_consistency (origin, old_size, old_root, new_size, new_root, consistent, detail, checked_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (origin, old_size, old_root, new_size, new_root)
DO UPDATE SET consistent = excluded.consistent, detail = excluded.detail, checked_at = excluded.checked_at

-- name: LogConsistencyPrune
-- Verdicts on pairs no active node holds a side of any more.
DELETE FROM log_consistency
WHERE NOT EXISTS (SELECT 1 FROM node_checkpoints c JOIN nodes n ON n.id = c.node_id AND n.state = 'active'
    WHERE c.origin = log_consistency.origin
      AND ((c.size = log_consistency.old_size AND c.root_hash = log_consistency.old_root)
        OR (c.size = log_consistency.new_size AND c.root_hash = log_consistency.new_root)))

-- name: LogConsistencyList
SELECT origin, old_size, old_root, new_size, new_root, consistent, detail, checked_at FROM log_consistency
ORDER BY origin, old_size, new_size, old_root, new_root

-- name: DetectLogSplit
-- Each active node holding a checkpoint that another active node's checkpoint of the same log
-- contradicts (the same size with another root, or a pair recorded as not one history), with what
-- contradicts it and one node holding that. The distinct views are few, so they are paired, not nodes.
WITH views AS (
    SELECT DISTINCT c.origin, c.size, c.root_hash FROM node_checkpoints c
    JOIN nodes n ON n.id = c.node_id AND n.state = 'active'),
splits AS (
    SELECT a.origin, a.size, a.root_hash, b.size AS other_size, b.root_hash AS other_root
    FROM views a JOIN views b ON b.origin = a.origin AND NOT (b.size = a.size AND b.root_hash = a.root_hash)
    WHERE b.size = a.size
       OR EXISTS (SELECT 1 FROM log_consistency v WHERE v.origin = a.origin AND NOT v.consistent
           AND ((v.old_size = a.size AND v.old_root = a.root_hash AND v.new_size = b.size AND v.new_root = b.root_hash)
             OR (v.old_size = b.size AND v.old_root = b.root_hash AND v.new_size = a.size AND v.new_root = a.root_hash))))
SELECT c.node_id, s.origin, s.size, s.root_hash, s.other_size, s.other_root,
    (SELECT n2.name FROM node_checkpoints c2 JOIN nodes n2 ON n2.id = c2.node_id AND n2.state = 'active'
     WHERE c2.origin = s.origin AND c2.size = s.other_size AND c2.root_hash = s.other_root ORDER BY n2.name LIMIT 1)
FROM splits s
JOIN node_checkpoints c ON c.origin = s.origin AND c.size = s.size AND c.root_hash = s.root_hash
JOIN nodes n ON n.id = c.node_id AND n.state = 'active'
ORDER BY c.node_id, s.origin, s.other_size, s.other_root
