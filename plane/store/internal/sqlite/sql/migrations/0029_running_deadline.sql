-- jobs_running_deadline serves the expiry sweep only (JobExpire). Its predicate now also says what only
-- the sweep's deadline_at <= ?1 implies, as on PostgreSQL, whose planner could otherwise take it for a
-- node's running job (see that migration); SQLite prefers jobs_one_running's equality on node_id
-- anyway, and keeps the same schema. Every running job has a deadline, so the index holds the same rows.
DROP INDEX jobs_running_deadline;
CREATE INDEX jobs_running_deadline ON jobs (deadline_at) WHERE state = 'running' AND deadline_at IS NOT NULL;
