-- Queries of node labels and targets, the fleet's target, leases and rollouts (plane/store/rollout_types.go,
-- lease_types.go), read after queries.sql.

-- fragment: rollout_columns
id, kind, release_sequence, word, params, preflight_word, preflight_params, verify_word, verify_params,
selector, stages, fleet_wide, max_parallel, error_budget, step_timeout_ms, state, misses, halt_node,
halt_reason, created_by, created_at, updated_at, finished_at, purpose

-- fragment: step_columns
node_id, node_name, stage, position, state, phase, job_id, previous_target, reason, started_at, phase_at,
finished_at, machine

-- fragment: lease_columns
subject, name, holder, purpose, acquired_at, expires_at

-- name: NodeSetLabels
UPDATE nodes SET labels = $2 WHERE id = $1 RETURNING {{node_columns}}

-- name: NodeLockLabels
SELECT labels FROM nodes WHERE id = $1 FOR NO KEY UPDATE

-- name: NodeTargetLock
SELECT target_sequence FROM nodes WHERE id = $1 FOR NO KEY UPDATE

-- name: NodeSetTarget
UPDATE nodes SET target_sequence = $2 WHERE id = $1 RETURNING {{node_columns}}

-- name: FleetTargetGet
SELECT target_sequence FROM fleet WHERE id = 1

-- name: FleetTargetSet
UPDATE fleet SET target_sequence = $1 WHERE id = 1

-- name: FleetTargetFirstNodes
-- The first release published becomes every node's target and the fleet's: there is nothing to keep.
-- Run before FleetTargetFirst, in its transaction.
UPDATE nodes SET target_sequence = $1 WHERE target_sequence = 0 AND (SELECT target_sequence FROM fleet WHERE id = 1) = 0

-- name: FleetTargetFirst
UPDATE fleet SET target_sequence = $1 WHERE id = 1 AND target_sequence = 0

-- name: LeaseAcquire
-- Granted when the lease is free, expired, already this holder's (then it is renewed) or held by the
-- holder it is handed over from; otherwise
-- nothing is returned. One statement: two callers racing for one lease serialise on its row.
INSERT INTO leases (subject, name, holder, purpose, acquired_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (subject, name) DO UPDATE SET holder = excluded.holder, purpose = excluded.purpose,
    acquired_at = CASE WHEN leases.holder = excluded.holder THEN leases.acquired_at ELSE excluded.acquired_at END,
    expires_at = excluded.expires_at
WHERE leases.holder = excluded.holder OR leases.expires_at <= excluded.acquired_at
    OR ($7::text <> '' AND leases.holder = $7::text)
RETURNING {{lease_columns}}

-- name: LeaseGet
SELECT {{lease_columns}} FROM leases WHERE subject = $1 AND name = $2

-- name: LeaseRenew
UPDATE leases SET expires_at = $4 WHERE subject = $1 AND name = $2 AND holder = $3 RETURNING {{lease_columns}}

-- name: LeaseRelease
DELETE FROM leases WHERE subject = $1 AND name = $2 AND holder = $3

-- name: LeaseList
SELECT {{lease_columns}} FROM leases WHERE ($1 = '' OR subject = $1) AND (NOT $2 OR expires_at > $3)
ORDER BY subject, name

-- name: RolloutInsert
INSERT INTO rollouts (id, kind, release_sequence, word, params, preflight_word, preflight_params, verify_word,
    verify_params, selector, stages, fleet_wide, max_parallel, error_budget, step_timeout_ms, state, created_by,
    created_at, updated_at, purpose)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 'running', $16, $17, $17, $18)

-- name: RolloutStepInsert
INSERT INTO rollout_steps (rollout_id, node_id, node_name, stage, position, state, machine)
VALUES ($1, $2, $3, $4, $5, 'pending', $6)

-- name: RolloutEventInsert
INSERT INTO rollout_events (rollout_id, at, actor, action, detail) VALUES ($1, $2, $3, $4, $5)

-- name: RolloutGet
SELECT {{rollout_columns}} FROM rollouts WHERE id = $1

-- name: RolloutList
SELECT {{rollout_columns}} FROM rollouts WHERE ($1 = '' OR state = $1) ORDER BY id DESC LIMIT $2

-- name: RolloutListJudging
-- Stopped rollouts with a step still under way: the engine judges those steps when their jobs end.
SELECT {{rollout_columns}} FROM rollouts WHERE state IN ('paused', 'halted', 'aborted')
    AND EXISTS (SELECT 1 FROM rollout_steps WHERE rollout_id = rollouts.id AND state = 'running')
ORDER BY id DESC LIMIT $1

-- name: RolloutSteps
SELECT {{step_columns}} FROM rollout_steps WHERE rollout_id = $1 ORDER BY stage, position

-- name: RolloutEvents
SELECT at, actor, action, detail FROM rollout_events WHERE rollout_id = $1 ORDER BY seq

-- name: RolloutSetState
-- $3::jsonb is a JSON array of the states the rollout may be moved from.
UPDATE rollouts SET state = $2::text, updated_at = $4::timestamptz,
    finished_at = CASE WHEN $2::text IN ('completed', 'aborted', 'reverted') THEN $4::timestamptz ELSE NULL END,
    misses = CASE WHEN $2::text = 'running' AND state = 'halted' THEN 0 ELSE misses END,
    halt_node = CASE WHEN $2::text = 'running' THEN '' ELSE halt_node END,
    halt_reason = CASE WHEN $2::text = 'running' THEN '' ELSE halt_reason END
WHERE id = $1 AND state IN (SELECT jsonb_array_elements_text($3::jsonb))
RETURNING {{rollout_columns}}

-- name: RolloutMiss
UPDATE rollouts SET misses = misses + 1, updated_at = $4::timestamptz,
    state = CASE WHEN state IN ('running', 'paused') AND misses + 1 > error_budget THEN 'halted' ELSE state END,
    halt_node = CASE WHEN state IN ('running', 'paused') AND misses + 1 > error_budget THEN $2::text ELSE halt_node END,
    halt_reason = CASE WHEN state IN ('running', 'paused') AND misses + 1 > error_budget THEN $3::text ELSE halt_reason END
WHERE id = $1 AND state IN ('running', 'paused', 'halted', 'aborted')
RETURNING {{rollout_columns}}

-- name: RolloutStepUpdate
UPDATE rollout_steps SET state = $5::text, phase = $6::text,
    job_id = CASE WHEN $7::text = '' THEN job_id ELSE $7::text END,
    previous_target = CASE WHEN $8::bigint = 0 THEN previous_target ELSE $8::bigint END,
    reason = CASE WHEN $9::text = '' THEN reason ELSE $9::text END,
    started_at = CASE WHEN state = 'pending' AND $5::text = 'running' THEN $10::timestamptz ELSE started_at END,
    phase_at = $10::timestamptz,
    finished_at = CASE WHEN $5::text IN ('passed', 'failed', 'skipped') THEN $10::timestamptz ELSE finished_at END
WHERE rollout_id = $1 AND node_id = $2 AND state = $3::text AND phase = $4::text
RETURNING {{step_columns}}

-- name: RolloutStepGet
SELECT {{step_columns}} FROM rollout_steps WHERE rollout_id = $1 AND node_id = $2

-- name: RolloutStepsSkip
-- An aborted rollout's steps that never started are skipped.
UPDATE rollout_steps SET state = 'skipped', finished_at = $2 WHERE rollout_id = $1 AND state = 'pending'

-- name: RolloutStepsRetry
-- Resuming a halted rollout tries its failed steps again: the cause was fixed, or the operator says so.
UPDATE rollout_steps SET state = 'pending', phase = '', job_id = '', finished_at = NULL
WHERE rollout_id = $1 AND state = 'failed'
