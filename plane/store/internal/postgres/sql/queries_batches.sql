-- Batches: one word on many nodes, one job a node (batch_types.go).

-- fragment: batch_columns
b.id, b.word, b.selector, b.class, b.params, b.max_parallel, b.error_budget, b.jobs, b.created_by,
b.created_at, b.stopped_at, b.stop_reason, (SELECT count(*) FROM batch_skips s WHERE s.batch_id = b.id)

-- name: BatchInsert
INSERT INTO batches (id, word, selector, class, params, max_parallel, error_budget, jobs, created_by, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)

-- name: BatchNodes
-- The targets' rows, locked as JobCreate locks one (NodeLockShared): $1 a JSON array of node ids.
SELECT id, name, state, vocabulary FROM nodes
WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))
ORDER BY id
FOR SHARE

-- name: BatchJobsInsert
-- $1: the jobs as a JSON array of {id, node_id, version, digest, held}, checked by the caller.
INSERT INTO jobs (id, node_id, word, word_version, word_digest, class, params, state, budget_ms,
                  created_by, created_at, batch_id, held)
SELECT t.id, t.node_id, $2, t.version, t.digest, $3, $4, 'queued', $5, $6, $7, $8, t.held
FROM jsonb_to_recordset($1::jsonb) AS t (id text, node_id text, version text, digest text, held boolean)

-- name: BatchSkipsInsert
-- $2: the skipped nodes as a JSON array of {node_id, node_name, reason}.
INSERT INTO batch_skips (batch_id, node_id, node_name, reason)
SELECT $1, t.node_id, t.node_name, t.reason
FROM jsonb_to_recordset($2::jsonb) AS t (node_id text, node_name text, reason text)

-- name: BatchGet
SELECT {{batch_columns}} FROM batches b WHERE b.id = $1

-- name: BatchLock
-- An advance holds the batch's row, so that two results ending at once never release past the bound.
SELECT {{batch_columns}} FROM batches b WHERE b.id = $1 FOR UPDATE

-- name: BatchList
SELECT {{batch_columns}} FROM batches b WHERE ($1 = '' OR b.id < $1) ORDER BY b.id DESC LIMIT $2

-- name: BatchCounts
SELECT state, held, count(*) FROM jobs WHERE batch_id = $1 GROUP BY state, held

-- name: BatchFailures
-- Bounded by $2: the budget needs only to know whether failures passed it.
SELECT count(*) FROM (SELECT 1 FROM jobs WHERE batch_id = $1 AND state IN ('failed', 'refused', 'lost') LIMIT $2) f

-- name: BatchActive
SELECT count(*) FROM jobs WHERE batch_id = $1 AND ((state = 'queued' AND NOT held) OR state = 'running')

-- name: BatchRelease
UPDATE jobs SET held = false
WHERE id IN (SELECT id FROM jobs WHERE batch_id = $1 AND state = 'queued' AND held ORDER BY id LIMIT $2)
RETURNING {{job_columns}}

-- name: BatchStop
UPDATE batches SET stopped_at = $2, stop_reason = $3 WHERE id = $1 AND stopped_at IS NULL

-- name: BatchCancelQueued
UPDATE jobs SET state = 'cancelled', held = false, finished_at = $2, outcome_code = $3, outcome_message = $4,
                finished_by = $5
WHERE batch_id = $1 AND state = 'queued'
RETURNING {{job_columns}}

-- name: BatchJobList
-- $2: a state ('' for all, 'waiting' for queued and held); $3: a job whose ending the rows share.
SELECT j.id, j.node_id, j.word, j.word_version, j.word_digest, j.class, j.params, j.state, j.budget_ms,
       j.created_by, j.created_at, j.claimed_at, j.deadline_at, j.finished_at, j.outcome_code,
       j.outcome_message, j.output, '', NULL::json, j.duration_ms, j.finished_by, COALESCE(j.batch_id, ''),
       COALESCE(n.name, ''), j.held
FROM jobs j LEFT JOIN nodes n ON n.id = j.node_id
WHERE j.batch_id = $1
  AND ($2 = '' OR ($2 = 'waiting' AND j.state = 'queued' AND j.held)
       OR (j.state = $2 AND NOT ($2 = 'queued' AND j.held)))
  AND ($3 = '' OR EXISTS (SELECT 1 FROM jobs l WHERE l.id = $3 AND l.batch_id = $1 AND l.state = j.state
       AND l.outcome_code = j.outcome_code AND l.output::text IS NOT DISTINCT FROM j.output::text))
  AND ($4 = '' OR j.id > $4)
ORDER BY j.id
LIMIT $5

-- name: BatchGroups
SELECT state, outcome_code, min(output::text), count(*), min(id) FROM jobs
WHERE batch_id = $1 AND finished_at IS NOT NULL
GROUP BY state, outcome_code, output::text
ORDER BY count(*) DESC, min(id)
LIMIT $2

-- name: BatchSkipList
SELECT node_id, node_name, reason FROM batch_skips
WHERE batch_id = $1 AND ($2 = '' OR node_id > $2)
ORDER BY node_id
LIMIT $3

-- fragment: batches_past
-- The batches every job of which ended before $1 (a batch holds at least one job), oldest first.
SELECT b.id FROM batches b WHERE b.created_at < $1
    AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.batch_id = b.id AND (j.finished_at IS NULL OR j.finished_at >= $1))
    ORDER BY b.created_at, b.id LIMIT $2

-- name: BatchPruneJobs
DELETE FROM jobs WHERE batch_id IN ({{batches_past}})

-- name: BatchPruneSkips
DELETE FROM batch_skips WHERE batch_id IN ({{batches_past}})

-- name: BatchPrune
DELETE FROM batches WHERE id IN ({{batches_past}})

-- name: BatchStalledList
-- Batches a plane stopped between a job's end and the batch's advance left waiting: jobs still queued,
-- and either held jobs with room to run or failures past the budget. $1: at most this many.
SELECT b.id FROM batches b
WHERE b.stopped_at IS NULL
  AND EXISTS (SELECT 1 FROM jobs q WHERE q.batch_id = b.id AND q.state = 'queued')
  AND ((b.max_parallel > 0
        AND EXISTS (SELECT 1 FROM jobs h WHERE h.batch_id = b.id AND h.state = 'queued' AND h.held)
        AND (SELECT count(*) FROM jobs a WHERE a.batch_id = b.id
             AND ((a.state = 'queued' AND NOT a.held) OR a.state = 'running')) < b.max_parallel)
    OR (b.error_budget >= 0
        AND (SELECT count(*) FROM jobs f WHERE f.batch_id = b.id
             AND f.state IN ('failed', 'refused', 'lost')) > b.error_budget))
ORDER BY b.id
LIMIT $1
