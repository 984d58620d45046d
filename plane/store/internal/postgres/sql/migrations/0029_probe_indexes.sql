-- Two partial indexes whose predicate every lookup of one node's rows also says, so that PostgreSQL
-- could use either for those lookups, as a scan of the whole index filtered by node: on a table whose
-- statistics are young, where every index costs the same, the planner took the scan and kept it in the
-- connection's generic plan. Each now also says what only its own queries imply (a strict comparison
-- on its key implies the key is not null), and holds the same rows as before.
--
-- jobs_running_deadline serves the expiry sweep (JobExpire: deadline_at <= $1). Taken for a node's
-- running job (each claim, each result), it read every running job of the fleet and the dead versions
-- behind them: about 400 heap tuples per claim at 500 busy nodes. A claim sets the deadline with the
-- state, so every running job has one.
DROP INDEX jobs_running_deadline;
CREATE INDEX jobs_running_deadline ON jobs (deadline_at) WHERE state = 'running' AND deadline_at IS NOT NULL;

-- nodes_active_name keeps active nodes' names unique and serves NodeGetByName. Taken for a claim's
-- "is the node active" (id = $1 AND state = 'active'), it read every active node. Names are never null.
DROP INDEX nodes_active_name;
CREATE UNIQUE INDEX nodes_active_name ON nodes (name) WHERE state = 'active' AND name IS NOT NULL;
