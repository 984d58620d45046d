-- name: BackupTargetInsert
INSERT INTO backup_targets (name, endpoint, region, bucket, prefix, access_key_id, virtual_hosted, recovery, sealed, key_id,
    created_by, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)

-- fragment: BackupTargetColumns
name, endpoint, region, bucket, prefix, access_key_id, virtual_hosted, recovery, sealed, key_id, created_by, created_at

-- name: BackupTargetGet
SELECT {{BackupTargetColumns}} FROM backup_targets WHERE name = $1

-- name: BackupTargetList
SELECT {{BackupTargetColumns}} FROM backup_targets ORDER BY name

-- name: BackupTargetDelete
DELETE FROM backup_targets WHERE name = $1

-- name: BackupPolicyUpsert
INSERT INTO backup_policies (node_id, enabled, target, every_s, keep_days, verify_every_s, paths, databases, updated_by, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (node_id) DO UPDATE SET enabled = excluded.enabled, target = excluded.target, every_s = excluded.every_s,
    keep_days = excluded.keep_days, verify_every_s = excluded.verify_every_s, paths = excluded.paths,
    databases = excluded.databases, updated_by = excluded.updated_by, updated_at = excluded.updated_at

-- name: BackupPolicyList
SELECT node_id, enabled, target, every_s, keep_days, verify_every_s, paths, databases, updated_by, updated_at
FROM backup_policies ORDER BY node_id

-- name: BackupPolicyDelete
DELETE FROM backup_policies WHERE node_id = $1

-- name: BackupJobInsert
INSERT INTO backup_jobs (job_id, node_id, purpose, target, run, parent, chain, objects, started_at, state, kind, bytes, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'dispatched', '', 0, '')

-- fragment: BackupJobColumns
job_id, node_id, purpose, target, run, parent, chain, objects, started_at, state, kind, bytes, detail, judged_at

-- name: BackupJobGet
SELECT {{BackupJobColumns}} FROM backup_jobs WHERE job_id = $1

-- name: BackupJobList
SELECT {{BackupJobColumns}} FROM backup_jobs
WHERE ($1 = '' OR node_id = $1) AND (NOT $2 OR state = 'dispatched')
ORDER BY started_at DESC, job_id DESC LIMIT $3

-- name: BackupJobListRecent
-- $1: node ids as a JSON array; $2: at most this many jobs of each node, the newest started first.
SELECT {{BackupJobColumns}} FROM (
  SELECT *, row_number() OVER (PARTITION BY node_id ORDER BY started_at DESC, job_id DESC) AS nth
  FROM backup_jobs WHERE node_id IN (SELECT jsonb_array_elements_text($1::jsonb))
) recent WHERE nth <= $2
ORDER BY node_id, started_at DESC, job_id DESC

-- name: BackupJobSetRun
UPDATE backup_jobs SET run = $2 WHERE job_id = $1 AND run = ''

-- name: BackupJobJudge
UPDATE backup_jobs SET state = $2, kind = $3, run = CASE WHEN $4 = '' THEN run ELSE $4 END, bytes = $5, detail = $6, judged_at = $7
WHERE job_id = $1 AND state = 'dispatched'

-- name: BackupFindingsClear
DELETE FROM backup_findings WHERE node_id = $1

-- name: BackupFindingsInsert
-- $2: the findings as a JSON array of {source, summary}, checked by the caller.
INSERT INTO backup_findings (node_id, source, summary, found_at)
SELECT $1, e->>'source', e->>'summary', $3 FROM jsonb_array_elements($2::jsonb) e

-- name: BackupFindingsList
SELECT node_id, source, summary, found_at FROM backup_findings WHERE $1 = '' OR node_id = $1 ORDER BY node_id, source

-- name: DetectBackup
-- The active nodes with a finding of one source ($1).
SELECT f.node_id, f.summary FROM backup_findings f JOIN nodes n ON n.id = f.node_id AND n.state = 'active'
WHERE f.source = $1 ORDER BY f.node_id
