-- fragment: schedule_columns
id, name, word, params, selector, every_ms, cron, paused, role, created_by, updated_by, created_at, updated_at,
next_run_at, last_run_at, last_queued, last_skipped, last_failed, last_message

-- name: ScheduleInsert
INSERT INTO schedules (id, name, word, params, selector, every_ms, cron, paused, role, created_by, updated_by, created_at, updated_at, next_run_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11, $11, $12)
RETURNING {{schedule_columns}}

-- name: ScheduleGet
SELECT {{schedule_columns}} FROM schedules WHERE id = $1

-- name: ScheduleGetByName
SELECT {{schedule_columns}} FROM schedules WHERE name = $1

-- name: ScheduleList
SELECT {{schedule_columns}} FROM schedules ORDER BY name LIMIT $1

-- name: ScheduleListDue
-- $1: now. A NULL next run is due at once.
SELECT {{schedule_columns}} FROM schedules
WHERE NOT paused AND (next_run_at IS NULL OR next_run_at <= $1)
ORDER BY next_run_at NULLS FIRST, id LIMIT $2

-- name: ScheduleUpdate
UPDATE schedules SET word = $2, params = $3, selector = $4, every_ms = $5, cron = $6, paused = $7, role = $8,
    next_run_at = $9, updated_by = $10, updated_at = $11
WHERE id = $1
RETURNING {{schedule_columns}}

-- name: ScheduleFire
-- $2: the next run the caller saw (NULL: at once); nothing moves if another caller moved it first.
UPDATE schedules SET next_run_at = $3, last_run_at = $4
WHERE id = $1 AND NOT paused AND next_run_at IS NOT DISTINCT FROM $2::timestamptz
RETURNING {{schedule_columns}}

-- name: ScheduleRunRecord
UPDATE schedules SET last_queued = $2, last_skipped = $3, last_failed = $4, last_message = $5
WHERE id = $1
RETURNING {{schedule_columns}}

-- name: ScheduleDelete
DELETE FROM schedules WHERE id = $1

-- name: PackageReportList
-- $1: the word (packages_report, the one package_reports and nodes.reports_packages keep); $2, $3: the reboot and fix cutoffs
-- (NULL: not looked up); $4: look them up only for nodes whose newest report owes a reboot, or has
-- fixes waiting. The newest report is the node's package_reports row; an older one is found by an
-- index probe in a CASE, so only the nodes looked up pay one (a lateral join would be rescanned for
-- every node), its summary (migration 0027) read where it has one, its whole output where not. A node
-- without a package_reports row has no completed report, older or newer. $5: also the node's labels
-- and facts, what a role's selector matches (NULL otherwise, so a plane without roles reads none).
SELECT n.id, n.name, n.reports_packages, COALESCE(p.job_id, ''), p.finished_at, p.summary, COALESCE(p.owed, false), p.fixes,
    CASE WHEN $5::boolean THEN n.labels END, CASE WHEN $5::boolean THEN n.facts END
FROM nodes n
LEFT JOIN (SELECT node_id, job_id, finished_at, summary,
    CASE WHEN $2::timestamptz IS NOT NULL AND (NOT $4::boolean OR reboot_owed) THEN (SELECT
        COALESCE(j.summary -> 'reboot' ->> 'owed', j.output -> 'reboot' ->> 'owed') = 'true' FROM jobs j
        WHERE j.node_id = k.node_id AND j.word = $1 AND j.state = 'completed' AND j.finished_at <= $2::timestamptz
        ORDER BY j.id DESC LIMIT 1) END AS owed,
    CASE WHEN $3::timestamptz IS NOT NULL AND (NOT $4::boolean OR fixes_waiting) THEN (SELECT
        COALESCE(j.summary -> 'security_upgrades', j.output::jsonb -> 'security_upgrades') FROM jobs j
        WHERE j.node_id = k.node_id AND j.word = $1 AND j.state = 'completed' AND j.finished_at <= $3::timestamptz
        ORDER BY j.id DESC LIMIT 1) END AS fixes
    FROM package_reports k) p ON p.node_id = n.id
WHERE n.state = 'active'
ORDER BY n.name

-- name: SecuritySettingsGet
SELECT critical, updated_by, updated_at FROM security_settings WHERE id = 1

-- name: SecuritySettingsPut
INSERT INTO security_settings (id, critical, updated_by, updated_at) VALUES (1, $1::jsonb, $2, $3)
ON CONFLICT (id) DO UPDATE SET critical = excluded.critical, updated_by = excluded.updated_by, updated_at = excluded.updated_at

-- name: SecuritySettingsDelete
DELETE FROM security_settings WHERE id = 1
