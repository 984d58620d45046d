-- Queries of the SQLite store. Each block starts with "-- name: Field" (a field of the queries struct in
-- queries.go) or "-- fragment: name" (text that {{name}} stands for in later blocks); a block with no
-- statement does nothing. Every write transaction is BEGIN IMMEDIATE on the store's one writer
-- connection, so it holds the database's only write lock from its first statement: the row locks the
-- PostgreSQL queries take have nothing to add here, and those blocks are empty. Times are bound as
-- microseconds since the epoch.

-- fragment: join_columns
id, name, node_key, key_fingerprint, addresses, source_address, status, created_at, expires_at,
decided_at, decided_by, COALESCE(node_id, ''), provisioning_id, hold_reason

-- fragment: node_columns
id, name, node_key, key_fingerprint, addresses, state, created_at, last_seen_at, ended_at,
agent_version, statement_sequence, statement_digest, vocabulary, recipes, idle, claim_size_cap, refusals,
untrusted, labels, target_sequence, report_digest, update_state, update_offered, update_report, facts

-- fragment: job_columns
id, node_id, word, word_version, word_digest, class, params, state, budget_ms, created_by, created_at,
claimed_at, deadline_at, finished_at, outcome_code, outcome_message, output, transcript, audit,
duration_ms, finished_by, COALESCE(batch_id, '')

-- fragment: job_summary_columns
id, node_id, word, word_version, word_digest, class, params, state, budget_ms, created_by, created_at,
claimed_at, deadline_at, finished_at, outcome_code, outcome_message, NULL, '', NULL,
duration_ms, finished_by, COALESCE(batch_id, '')

-- fragment: token_columns
id, name, role, created_at, revoked_at

-- fragment: release_columns
sequence, version, statement_digest, published_at, published_by

------------------------------------------------------------------------------------------------------
-- Migrations

-- name: MigrationLock
-- Nothing: BEGIN IMMEDIATE already serialises migrations.

-- name: MigrationTable
CREATE TABLE IF NOT EXISTS lexicon_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at INTEGER NOT NULL
) STRICT

-- name: MigrationList
SELECT version, name, applied_at FROM lexicon_migrations ORDER BY version

-- name: MigrationInsert
INSERT INTO lexicon_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)

------------------------------------------------------------------------------------------------------
-- Joins

-- name: JoinLock
-- Nothing: the write transaction already serialises JoinCreate.

-- name: JoinCount
SELECT count(*), COALESCE(sum(CASE WHEN source_address = ?2 THEN 1 ELSE 0 END), 0)
FROM joins WHERE status = 'pending' AND expires_at > ?1

-- name: JoinPendingByKey
SELECT {{join_columns}} FROM joins WHERE key_fingerprint = ?1 AND status = 'pending'

-- name: JoinInsert
INSERT INTO joins (id, name, node_key, key_fingerprint, addresses, source_address, status, created_at,
                   expires_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?8)

-- name: JoinSetExpires
UPDATE joins SET expires_at = ?2 WHERE id = ?1

-- name: JoinSetStatus
UPDATE joins SET status = ?2 WHERE id = ?1

-- name: JoinGet
SELECT {{join_columns}} FROM joins WHERE id = ?1

-- name: JoinGetForUpdate
SELECT {{join_columns}} FROM joins WHERE id = ?1

-- name: JoinList
-- A pending join past its expiry is listed as expired whether or not JoinExpire has marked it yet.
SELECT {{join_columns}} FROM joins
WHERE (?1 = ''
       OR (?1 = 'pending' AND status = 'pending' AND expires_at > ?2)
       OR (?1 = 'expired' AND (status = 'expired' OR (status = 'pending' AND expires_at <= ?2)))
       OR (?1 IN ('approved', 'rejected') AND status = ?1))
  AND (?3 = '' OR id > ?3)
ORDER BY id
LIMIT ?4

-- name: JoinDecide
UPDATE joins SET status = ?2, decided_at = ?3, decided_by = ?4, node_id = NULLIF(?5, '') WHERE id = ?1

-- name: JoinExpireAll
UPDATE joins SET status = 'expired' WHERE status = 'pending' AND expires_at <= ?1

-- name: KeyRetired
SELECT EXISTS (SELECT 1 FROM retired_keys WHERE key_fingerprint = ?1)

-- name: KeyRetire
INSERT INTO retired_keys (key_fingerprint, reason, retired_at) VALUES (?1, ?2, ?3)
ON CONFLICT (key_fingerprint) DO NOTHING

------------------------------------------------------------------------------------------------------
-- Nodes

-- name: NodeInsert
-- A new node is given the fleet's target release.
INSERT INTO nodes (id, name, node_key, key_fingerprint, addresses, state, created_at, target_sequence)
VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6, (SELECT target_sequence FROM fleet WHERE id = 1))
RETURNING target_sequence

-- name: NodeGet
SELECT {{node_columns}} FROM nodes WHERE id = ?1

-- name: NodeGetByName
SELECT {{node_columns}} FROM nodes WHERE name = ?1 AND state = 'active'

-- name: NodeGetByKey
SELECT {{node_columns}} FROM nodes WHERE key_fingerprint = ?1

-- name: NodeList
SELECT {{node_columns}} FROM nodes
WHERE (?1 = '' OR state = ?1) AND (?2 = '' OR id > ?2)
ORDER BY id
LIMIT ?3

-- name: RelaxCommit
-- Nothing: synchronous is per connection in SQLite, and stays FULL.

-- name: NodeReport
UPDATE nodes
SET last_seen_at = ?2, agent_version = ?3, statement_sequence = ?4, statement_digest = ?5,
    vocabulary = ?6, recipes = ?7, idle = ?8, claim_size_cap = ?9, untrusted = ?10,
    report_digest = ?11, update_state = ?12, update_offered = ?13, update_report = ?14, facts = ?15, reach = ?16
WHERE id = ?1 AND state = 'active'
RETURNING {{node_columns}}

-- name: NodeReachGet
-- A node's words' reach, read apart from the node's columns: lists and pages never carry it.
SELECT reach FROM nodes WHERE id = ?1

-- name: NodeSeen
-- A claim whose report the plane already holds: only when the node was last seen and whether it is idle.
UPDATE nodes SET last_seen_at = ?2, idle = ?3 WHERE id = ?1 AND state = 'active'
RETURNING id

-- name: NodeLockShared
-- A read: the write transaction already keeps the node from changing under JobCreate.
SELECT state, vocabulary FROM nodes WHERE id = ?1

-- name: NodeLock
-- A read: the write transaction already keeps claims of one node from interleaving.
SELECT state FROM nodes WHERE id = ?1

-- name: NodeEndLockJobs
-- A read: the write transaction already holds every lock.
SELECT id FROM jobs WHERE node_id = ?1 AND state IN ('queued', 'running')

-- name: NodeEnd
UPDATE nodes SET state = ?2, ended_at = ?3 WHERE id = ?1 AND state = 'active'
RETURNING {{node_columns}}

-- name: NodeRefusalAdd
-- Run after JobFinish, in its transaction, when the job was refused.
UPDATE nodes SET refusals = refusals + 1 WHERE id = ?1

------------------------------------------------------------------------------------------------------
-- Nonces

-- name: NonceUse
-- Inserts the nonce, or takes over an expired row of the same nonce; a live row means a replay, and
-- the statement then changes no row.
INSERT INTO nonces (key_id, nonce, expires_at) VALUES (?1, ?2, ?3)
ON CONFLICT (key_id, nonce) DO UPDATE SET expires_at = excluded.expires_at
WHERE nonces.expires_at <= ?4

-- name: NoncePurge
DELETE FROM nonces WHERE expires_at <= ?1

------------------------------------------------------------------------------------------------------
-- Jobs

-- name: JobInsert
INSERT INTO jobs (id, node_id, word, word_version, word_digest, class, params, state, budget_ms,
                  created_by, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'queued', ?8, ?9, ?10)

-- A claim is JobClaimLose, JobClaimLock and JobClaim in one write transaction; the write lock keeps
-- claims of one node from interleaving.

-- name: JobClaimLose
-- When the node claims while idle (?3), its running job is lost.
UPDATE jobs SET state = 'lost', finished_at = ?2, outcome_code = ?4, outcome_message = ?5
WHERE ?3 AND node_id = ?1 AND state = 'running'
RETURNING id, word, COALESCE(batch_id, '')

-- name: JobClaimLock
-- A read: the node's state, in the shape of PostgreSQL's (JobClaimLose returned the lost job).
SELECT state, NULL, NULL, 0, NULL FROM nodes WHERE id = ?1

-- name: JobClaim
-- One job at a time per node is held by the write lock; jobs_one_running backs it up. After a result
-- (?3, the job finished at ?2 in this transaction), only if that result was recorded.
UPDATE jobs
SET state = 'running', claimed_at = ?2, deadline_at = ?2 + budget_ms * 1000
WHERE id = (
    SELECT id FROM jobs
    WHERE node_id = ?1 AND state = 'queued' AND held = 0
      AND NOT EXISTS (SELECT 1 FROM jobs WHERE node_id = ?1 AND state = 'running')
      AND EXISTS (SELECT 1 FROM nodes WHERE id = ?1 AND state = 'active')
      AND (?3 = '' OR EXISTS (SELECT 1 FROM jobs WHERE id = ?3 AND node_id = ?1 AND finished_at = ?2))
    ORDER BY id
    LIMIT 1)
RETURNING {{job_columns}}

-- name: JobGet
SELECT {{job_columns}} FROM jobs WHERE id = ?1

-- fragment: package_summary
-- The fleet security view's part of a completed packages_report output (?7), NULL for anything else
-- (see migration 0027). json() keeps each value JSON inside json_object.
CASE WHEN ?3 = 'completed' AND word = 'packages_report' AND json_valid(?7) THEN json_object(
    'known', json(?7 -> '$.known'), 'unknown', json(?7 -> '$.unknown'),
    'security_upgrades', json(?7 -> '$.security_upgrades'), 'half_configured', json(?7 -> '$.half_configured'),
    'stale_services', json(?7 -> '$.stale_services'),
    'reboot', json_object('owed', json(?7 -> '$.reboot.owed')), 'os', json_object('pretty_name', json(?7 -> '$.os.pretty_name'))) END

-- name: JobFinish
UPDATE jobs
SET state = ?3, finished_at = ?4, outcome_code = ?5, outcome_message = ?6, output = ?7,
    transcript = ?8, audit = ?9, duration_ms = ?10, summary = {{package_summary}}
WHERE id = ?1 AND node_id = ?2 AND state = 'running'
RETURNING {{job_columns}}

-- name: JobFinishClaim
-- JobFinish as the first statement of a finish-and-claim; the write lock is the node's lock.
UPDATE jobs
SET state = ?3, finished_at = ?4, outcome_code = ?5, outcome_message = ?6, output = ?7,
    transcript = ?8, audit = ?9, duration_ms = ?10, summary = {{package_summary}}
WHERE id = ?1 AND node_id = ?2 AND state = 'running'
RETURNING {{job_columns}}

-- name: JobFinishRefusal
-- After JobFinishClaim in its transaction: a refusal it recorded counts on the node.
UPDATE nodes SET refusals = refusals + 1
WHERE id = ?2 AND ?3 = 'refused'
  AND EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND node_id = ?2 AND state = 'refused' AND finished_at = ?4)

-- name: JobFinishSeen
-- After JobFinishClaim in its transaction: the node is seen now and idle, as NodeSeen records it.
UPDATE nodes SET last_seen_at = ?2, idle = 1 WHERE id = ?1 AND state = 'active'

-- name: JobFinishNonce
-- First in a finish-and-claim's transaction when the result's nonce is recorded with it: a plain
-- insert, so a nonce already recorded fails it (unique violation) and nothing commits.
INSERT INTO nonces (key_id, nonce, expires_at) VALUES (?1, ?2, ?3)

-- name: JobLoseRunning
UPDATE jobs SET state = 'lost', finished_at = ?2, outcome_code = ?3, outcome_message = ?4
WHERE node_id = ?1 AND state = 'running'
RETURNING {{job_columns}}

-- name: JobCancelQueuedForNode
UPDATE jobs SET state = 'cancelled', finished_at = ?2, outcome_code = ?3, outcome_message = ?4,
                finished_by = ?5
WHERE node_id = ?1 AND state = 'queued'
RETURNING {{job_columns}}

-- name: JobExpire
UPDATE jobs SET state = 'lost', finished_at = ?1, outcome_code = ?2, outcome_message = ?3
WHERE state = 'running' AND deadline_at <= ?1
RETURNING {{job_columns}}

-- name: JobCancel
UPDATE jobs SET state = 'cancelled', finished_at = ?2, outcome_code = ?3, outcome_message = ?4,
                finished_by = ?5
WHERE id = ?1 AND state = 'queued'
RETURNING {{job_columns}}

-- name: JobMarkFailed
UPDATE jobs SET state = 'failed', finished_at = ?2, outcome_code = ?3, outcome_message = ?4,
                finished_by = ?5
WHERE id = ?1 AND state IN ('queued', 'running')
RETURNING {{job_columns}}

-- name: JobList
SELECT {{job_summary_columns}} FROM jobs
WHERE (?1 = '' OR node_id = ?1) AND (?2 = '' OR state = ?2) AND (?3 = '' OR id < ?3)
ORDER BY id DESC
LIMIT ?4

------------------------------------------------------------------------------------------------------
-- Tokens

-- name: TokenInsert
INSERT INTO tokens (id, name, role, token_hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5)

-- name: TokenGetByHash
SELECT {{token_columns}} FROM tokens WHERE token_hash = ?1

-- name: TokenList
SELECT {{token_columns}} FROM tokens WHERE (?1 OR revoked_at IS NULL) ORDER BY id

-- name: TokenGet
SELECT {{token_columns}} FROM tokens WHERE id = ?1

-- name: TokenRevoke
UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL RETURNING {{token_columns}}

------------------------------------------------------------------------------------------------------
-- Releases and artifacts

-- name: ReleaseLock
-- Nothing: the write transaction already serialises ReleasePut.

-- name: ReleaseMaxSequence
SELECT COALESCE(max(sequence), 0) FROM releases

-- name: ReleaseInsert
INSERT INTO releases (sequence, version, statement_digest, bundle, published_at, published_by, expires_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)

-- name: ReleaseArtifactInsert
INSERT INTO release_artifacts (release_sequence, name, digest) VALUES (?1, ?2, ?3)

-- name: ReleaseCurrent
SELECT {{release_columns}}, bundle FROM releases ORDER BY sequence DESC LIMIT 1

-- name: ReleaseGet
SELECT {{release_columns}}, bundle FROM releases WHERE sequence = ?1

-- name: ReleaseList
SELECT {{release_columns}}, NULL FROM releases WHERE (?2 = 0 OR sequence < ?2)
ORDER BY sequence DESC LIMIT ?1

-- name: ReleaseArtifacts
SELECT ra.name, ra.digest, a.size
FROM release_artifacts ra JOIN artifacts a ON a.digest = ra.digest
WHERE ra.release_sequence = ?1
ORDER BY ra.name

-- name: ArtifactInsert
INSERT INTO artifacts (digest, size, data, created_at) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (digest) DO NOTHING

-- name: ArtifactGet
SELECT digest, size, data FROM artifacts WHERE digest = ?1

-- name: ArtifactHas
SELECT EXISTS (SELECT 1 FROM artifacts WHERE digest = ?1)

------------------------------------------------------------------------------------------------------
-- Cases. Intake runs in one write transaction, which serialises it with every other writer.

-- fragment: case_columns
node_id, case_id, recipe, state, opened_at, closed_at, closed_by, summary, body, received_at, updated_at

-- name: CaseGet
SELECT {{case_columns}} FROM cases WHERE node_id = ?1 AND case_id = ?2

-- name: CaseOpenForRecipe
SELECT {{case_columns}} FROM cases WHERE node_id = ?1 AND recipe = ?2 AND state = 'open'

-- name: CaseNewest
SELECT COALESCE(max(case_id), 0) FROM cases WHERE node_id = ?1 AND recipe = ?2

-- name: CaseOpenCount
SELECT count(*) FROM cases WHERE node_id = ?1 AND state = 'open'

-- name: CaseInsert
INSERT INTO cases (node_id, case_id, recipe, state, opened_at, closed_at, closed_by, summary, body,
                   received_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)

-- name: CaseClose
UPDATE cases SET state = 'closed', closed_at = ?3, closed_by = ?4, updated_at = ?5
WHERE node_id = ?1 AND case_id = ?2 AND state = 'open'

-- name: CaseSetBody
-- The body rides every claim until one succeeds: the first copy is kept.
UPDATE cases SET body = ?3, updated_at = ?4 WHERE node_id = ?1 AND case_id = ?2 AND body IS NULL

-- name: CaseTouch
UPDATE cases SET updated_at = ?3 WHERE node_id = ?1 AND case_id = ?2

-- name: CaseNoteCount
SELECT count(*), COALESCE(max(CASE WHEN author = 'plane' THEN seq END), 0)
FROM case_notes WHERE node_id = ?1 AND case_id = ?2

-- name: CaseNoteInsert
-- A note the plane has already (its claim was sent again) changes nothing.
INSERT INTO case_notes (node_id, case_id, author, seq, at, text, received_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (node_id, case_id, author, seq) DO NOTHING

-- name: CaseNotes
SELECT author, seq, at, text, received_at FROM case_notes
WHERE node_id = ?1 AND case_id = ?2
ORDER BY at, author, seq

-- name: CaseNodeState
-- Intake's read-only first look.
SELECT state FROM nodes WHERE id = ?1

-- name: CaseNodeNoteSeqs
SELECT seq FROM case_notes WHERE node_id = ?1 AND case_id = ?2 AND author = 'node'

-- name: CaseList
SELECT {{case_columns}} FROM cases WHERE node_id = ?1 ORDER BY case_id DESC LIMIT ?2

------------------------------------------------------------------------------------------------------
-- Incidents. The write transaction serialises every change; the PostgreSQL queries' row locks have
-- nothing to add here.

-- fragment: incident_columns
i.id, COALESCE(i.node_id, ''), COALESCE(n.name, ''), i.source, i.subject, i.severity, i.condition, i.triage, i.snoozed_until, i.summary, i.case_id,
i.opened_at, i.changed_at, i.cleared_at, i.triaged_at, i.triaged_by, i.reason, i.events

-- name: IncidentOpenFor
SELECT {{incident_columns}} FROM incidents i LEFT JOIN nodes n ON n.id = i.node_id
WHERE COALESCE(i.node_id, '') = ?1 AND i.source = ?2 AND i.subject = ?3 AND i.condition = 'open'

-- name: IncidentLatestFor
SELECT {{incident_columns}} FROM incidents i LEFT JOIN nodes n ON n.id = i.node_id
WHERE COALESCE(i.node_id, '') = ?1 AND i.source = ?2 AND i.subject = ?3
ORDER BY i.opened_at DESC, i.id DESC
LIMIT 1

-- name: IncidentInsert
INSERT INTO incidents (id, node_id, source, severity, condition, triage, summary, case_id, opened_at, changed_at, subject)
VALUES (?1, NULLIF(?2, ''), ?3, ?4, 'open', 'new', ?5, ?6, ?7, ?7, ?8)

-- name: IncidentReopen
UPDATE incidents
SET condition = 'open', triage = 'new', snoozed_until = NULL, cleared_at = NULL, changed_at = ?2,
    triaged_at = ?2, triaged_by = 'plane', reason = 'the condition came back soon after it cleared',
    severity = ?3, summary = ?4, case_id = ?5
WHERE id = ?1

-- name: IncidentClear
UPDATE incidents SET condition = 'cleared', cleared_at = ?2, changed_at = ?2 WHERE id = ?1 AND condition = 'open'

-- name: IncidentSetTriage
UPDATE incidents SET triage = ?2, snoozed_until = ?3, triaged_at = ?4, triaged_by = ?5, reason = ?6 WHERE id = ?1

-- name: IncidentSetCase
UPDATE incidents SET case_id = ?2, summary = ?3 WHERE id = ?1

-- name: IncidentEventNext
UPDATE incidents SET events = events + 1 WHERE id = ?1 RETURNING events

-- name: IncidentEventInsert
INSERT INTO incident_events (incident_id, seq, at, kind, actor, triage, snoozed_until, text)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)

-- name: IncidentGet
SELECT {{incident_columns}} FROM incidents i LEFT JOIN nodes n ON n.id = i.node_id WHERE i.id = ?1

-- name: IncidentGetForUpdate
SELECT {{incident_columns}} FROM incidents i LEFT JOIN nodes n ON n.id = i.node_id WHERE i.id = ?1

-- name: IncidentList
SELECT {{incident_columns}} FROM incidents i LEFT JOIN nodes n ON n.id = i.node_id
WHERE (?1 = '' OR i.node_id = ?1)
  AND (NOT ?2 OR i.triage = 'new' OR (i.triage = 'snoozed' AND i.snoozed_until <= ?3))
  AND (?4 = '' OR i.condition = ?4)
  AND (?5 = '' OR i.id < ?5)
ORDER BY i.id DESC
LIMIT ?6

-- name: IncidentCount
SELECT condition, triage, count(*) FROM incidents GROUP BY condition, triage

-- name: IncidentEvents
SELECT incident_id, seq, at, kind, actor, triage, snoozed_until, text FROM incident_events
WHERE incident_id = ?1 ORDER BY seq

-- name: IncidentReconcileLock
-- Nothing: the write transaction already serialises reconciler runs.

-- name: IncidentOpenOfEndedNodes
SELECT {{incident_columns}} FROM incidents i JOIN nodes n ON n.id = i.node_id
WHERE i.condition = 'open' AND n.state <> 'active'
ORDER BY i.id

-- name: IncidentOpenBySource
SELECT {{incident_columns}} FROM incidents i LEFT JOIN nodes n ON n.id = i.node_id
WHERE i.condition = 'open' AND i.source = ?1
ORDER BY i.id

-- name: DetectSilent
SELECT id, last_seen_at, created_at FROM nodes
WHERE state = 'active' AND COALESCE(last_seen_at, created_at) <= ?1

-- name: DetectJobs
SELECT j.node_id, count(*) FROM jobs j JOIN nodes n ON n.id = j.node_id
WHERE n.state = 'active' AND j.state = ?1 AND j.finished_at > ?2
GROUP BY j.node_id
HAVING count(*) > ?3

-- name: DetectReleaseExpiring
-- Releases some active node is served whose statement expires before ?1 (now plus the lead), with
-- how many active nodes are served each.
SELECT r.sequence, r.version, r.expires_at, COUNT(n.id) FROM releases r JOIN nodes n ON n.target_sequence = r.sequence
WHERE n.state = 'active' AND r.expires_at IS NOT NULL AND r.expires_at < ?1
GROUP BY r.sequence, r.version, r.expires_at

-- name: DetectUntrusted
SELECT id, untrusted FROM nodes WHERE state = 'active' AND untrusted <> ''

-- name: DetectUpdateRefused
-- Nodes that refused the agent their statement offers, and nodes with such an incident open that do
-- not yet run the pinned agent: the incident clears when the node reports current, not before.
SELECT n.id, n.update_state, n.update_offered, n.update_report FROM nodes n
WHERE n.state = 'active' AND (n.update_state IN ('verify_failed', 'probe_failed', 'rejected')
  OR (n.update_state <> 'current' AND EXISTS (SELECT 1 FROM incidents i WHERE i.node_id = n.id
      AND i.source = ?1 AND i.condition = 'open')))

------------------------------------------------------------------------------------------------------
-- Notifications

-- fragment: notification_columns
id, incident_id, event_seq, webhook, kind, state, attempts, next_at, last_error, created_at, finished_at

-- name: NotificationInsert
INSERT INTO notifications (id, incident_id, event_seq, webhook, kind, state, next_at, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6)

-- name: NotificationExhaust
UPDATE notifications
SET state = 'failed', finished_at = ?1, lease_until = NULL, lease_holder = '',
    last_error = CASE WHEN last_error = '' THEN 'no outcome was recorded for its last attempt' ELSE last_error END
WHERE state = 'pending' AND attempts >= ?2 AND (lease_until IS NULL OR lease_until <= ?1)

-- name: NotificationClaim
UPDATE notifications SET attempts = attempts + 1, lease_until = ?2, lease_holder = ?3
WHERE id IN (
    SELECT id FROM notifications
    WHERE state = 'pending' AND next_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1)
      AND attempts < ?4
      AND webhook IN (SELECT value FROM json_each(?5))
    ORDER BY next_at, id
    LIMIT ?6)
RETURNING {{notification_columns}}

-- name: NotificationAttemptInsert
INSERT INTO notification_attempts (notification_id, attempt, at, holder, error)
VALUES (?1, ?2, ?3, ?4, 'no outcome was recorded (the plane stopped while delivering?)')

-- name: NotificationRecord
UPDATE notifications
SET state = ?3, next_at = ?4, last_error = ?5, finished_at = ?6, lease_until = NULL, lease_holder = ''
WHERE id = ?1 AND lease_holder = ?2 AND state = 'pending'
RETURNING {{notification_columns}}

-- name: NotificationAttemptUpdate
UPDATE notification_attempts SET status = ?3, error = ?4, duration_ms = ?5 WHERE notification_id = ?1 AND attempt = ?2

-- name: NotificationGet
SELECT {{notification_columns}} FROM notifications WHERE id = ?1

-- name: NotificationList
SELECT {{notification_columns}} FROM notifications WHERE incident_id = ?1 ORDER BY created_at, id

-- name: NotificationAttempts
SELECT a.notification_id, a.attempt, a.at, a.status, a.error, a.duration_ms
FROM notification_attempts a JOIN notifications n ON n.id = a.notification_id
WHERE n.incident_id = ?1
ORDER BY a.notification_id, a.attempt
