-- Restores queued from the plane are recorded beside backups and verifies: the record names the run
-- and the chain the read grant covers when the node claims the job, and holds the node's verdict.
-- SQLite cannot change a CHECK in place: the table is built again under the same name (nothing
-- references backup_jobs; foreign-key checks are deferred to the commit all the same).
PRAGMA defer_foreign_keys = ON;

CREATE TABLE backup_jobs_copy AS SELECT * FROM backup_jobs;
DROP TABLE backup_jobs;

CREATE TABLE backup_jobs (
    job_id     TEXT PRIMARY KEY REFERENCES jobs (id),
    node_id    TEXT NOT NULL REFERENCES nodes (id),
    purpose    TEXT NOT NULL CHECK (purpose IN ('backup', 'verify', 'restore')),
    target     TEXT NOT NULL,
    run        TEXT NOT NULL,
    parent     TEXT NOT NULL,
    chain      TEXT NOT NULL,
    objects    INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    state      TEXT NOT NULL,
    kind       TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    detail     TEXT NOT NULL,
    judged_at  INTEGER
) STRICT;
INSERT INTO backup_jobs (job_id, node_id, purpose, target, run, parent, chain, objects, started_at, state, kind, bytes, detail, judged_at)
SELECT job_id, node_id, purpose, target, run, parent, chain, objects, started_at, state, kind, bytes, detail, judged_at
FROM backup_jobs_copy;
DROP TABLE backup_jobs_copy;
CREATE INDEX backup_jobs_node ON backup_jobs (node_id, started_at DESC);
CREATE INDEX backup_jobs_dispatched ON backup_jobs (started_at) WHERE state = 'dispatched';
