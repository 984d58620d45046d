-- The same predicates as on PostgreSQL (see that migration: its planner could take these partial
-- indexes for lookups of one node's rows, as whole-index scans). SQLite ranks the equality probe first
-- without statistics; the schema changes with PostgreSQL's so the two stay one. Both hold the same rows.
DROP INDEX jobs_running_deadline;
CREATE INDEX jobs_running_deadline ON jobs (deadline_at) WHERE state = 'running' AND deadline_at IS NOT NULL;
DROP INDEX nodes_active_name;
CREATE UNIQUE INDEX nodes_active_name ON nodes (name) WHERE state = 'active' AND name IS NOT NULL;
