-- jobs_running_deadline serves the expiry sweep only (JobExpire: running jobs past their deadline). Its
-- predicate used to be the same as jobs_one_running's (state = 'running'), so every lookup of a node's
-- running job (each claim, each result) could use it too, as a whole-index scan filtered by node. On a
-- table whose statistics are young, where both indexes cost the same, the planner took it and kept
-- it in the connection's generic plan: each claim then read every running job of the fleet and the
-- dead versions behind them (about 400 heap tuples per claim at 500 busy nodes). The added clause is
-- implied by the sweep's deadline_at <= $1 and by no node lookup, so only the sweep can use it. Every
-- running job has a deadline (JobClaim sets both), so the index holds the same rows.
DROP INDEX jobs_running_deadline;
CREATE INDEX jobs_running_deadline ON jobs (deadline_at) WHERE state = 'running' AND deadline_at IS NOT NULL;
