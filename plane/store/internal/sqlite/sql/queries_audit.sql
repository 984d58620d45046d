-- name: AuditEventInsert
INSERT INTO audit_events (id, at, via, actor_id, actor, address, operation, target, status, code, duration_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)

-- name: AuditEventFinish
-- Only a pending row takes an outcome, so an outcome is written once; a sign-in learns its actor and a
-- create its target only then.
UPDATE audit_events SET status = ?2, code = ?3, duration_ms = ?4,
    actor_id = CASE WHEN actor_id = '' THEN ?5 ELSE actor_id END,
    actor = CASE WHEN actor = '' THEN ?6 ELSE actor END,
    target = CASE WHEN target = '' THEN ?7 ELSE target END
WHERE id = ?1 AND code = ?8
RETURNING id, at, via, actor_id, actor, address, operation, target, status, code, duration_ms

-- name: AuditEventList
SELECT id, at, via, actor_id, actor, address, operation, target, status, code, duration_ms FROM audit_events
WHERE (?1 = '' OR actor = ?1 OR actor_id = ?1) AND (?2 = '' OR operation = ?2)
    AND (?3 = '' OR target = ?3)
    AND (?4 = '' OR code = ?4 OR (?4 = 'failed' AND code NOT IN ('ok', 'pending')))
    AND at >= ?5 AND at < ?6 AND (?7 = '' OR id < ?7)
ORDER BY id DESC
LIMIT ?8

-- name: EnrolmentInsert
INSERT INTO enrolments (id, token_hash, labels, approve, expires_at, used_at, join_id, created_by, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, NULL, '', ?6, ?7)

-- name: EnrolmentGetByToken
SELECT id, labels, approve, expires_at, used_at, join_id, created_by, created_at FROM enrolments WHERE token_hash = ?1

-- name: EnrolmentUse
-- Only an unused, unexpired token is spent, so a token makes one join.
UPDATE enrolments SET used_at = ?2, join_id = ?3 WHERE token_hash = ?1 AND used_at IS NULL AND expires_at > ?2
RETURNING id, labels, approve, expires_at, used_at, join_id, created_by, created_at

-- name: AuditEventPrune
DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE at < ?1 ORDER BY at LIMIT ?2)

-- name: DriverCallPrune
DELETE FROM driver_calls WHERE id IN (SELECT id FROM driver_calls WHERE at < ?1 ORDER BY at LIMIT ?2)

-- name: JobPrune
DELETE FROM jobs WHERE id IN (SELECT j.id FROM jobs j WHERE j.finished_at < ?1
    AND j.state IN ('completed', 'failed', 'refused', 'lost', 'cancelled') AND j.batch_id IS NULL
    AND NOT EXISTS (SELECT 1 FROM backup_jobs b WHERE b.job_id = j.id)
    AND NOT EXISTS (SELECT 1 FROM rollout_steps r WHERE r.job_id = j.id)
    ORDER BY j.finished_at LIMIT ?2)

-- fragment: incidents_past
SELECT i.id FROM incidents i WHERE i.condition = 'cleared' AND i.triage IN ('resolved', 'ignored') AND i.changed_at < ?1
    ORDER BY i.changed_at, i.id LIMIT ?2

-- name: IncidentPruneLock
SELECT id FROM incidents WHERE id IN ({{incidents_past}})

-- name: IncidentPruneAttempts
DELETE FROM notification_attempts WHERE notification_id IN (SELECT n.id FROM notifications n WHERE n.incident_id IN ({{incidents_past}}))

-- name: IncidentPruneNotifications
DELETE FROM notifications WHERE incident_id IN ({{incidents_past}})

-- name: IncidentPruneEvents
DELETE FROM incident_events WHERE incident_id IN ({{incidents_past}})

-- name: IncidentPrune
DELETE FROM incidents WHERE id IN ({{incidents_past}})
