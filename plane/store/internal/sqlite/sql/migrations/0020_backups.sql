-- Backups: the buckets nodes back up to (the secret sealed by the plane under its master key), the
-- policies (node_id '' is the fleet's default), the jobs the plane dispatched with its verdict on each,
-- and the findings its witness and health checks keep per node, which the backup detectors read.
CREATE TABLE backup_targets (
    name           TEXT PRIMARY KEY,
    endpoint       TEXT NOT NULL,
    region         TEXT NOT NULL,
    bucket         TEXT NOT NULL,
    prefix         TEXT NOT NULL,
    access_key_id  TEXT NOT NULL,
    virtual_hosted INTEGER NOT NULL,
    recovery       TEXT NOT NULL,
    sealed         BLOB NOT NULL,
    key_id         TEXT NOT NULL,
    created_by     TEXT NOT NULL,
    created_at     INTEGER NOT NULL
) STRICT;

CREATE TABLE backup_policies (
    node_id        TEXT PRIMARY KEY,
    enabled        INTEGER NOT NULL,
    target         TEXT NOT NULL,
    every_s        INTEGER NOT NULL,
    keep_days      INTEGER NOT NULL,
    verify_every_s INTEGER NOT NULL,
    paths          TEXT NOT NULL,
    databases      TEXT NOT NULL,
    updated_by     TEXT NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;

CREATE TABLE backup_jobs (
    job_id     TEXT PRIMARY KEY REFERENCES jobs (id),
    node_id    TEXT NOT NULL REFERENCES nodes (id),
    purpose    TEXT NOT NULL CHECK (purpose IN ('backup', 'verify')),
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
CREATE INDEX backup_jobs_node ON backup_jobs (node_id, started_at DESC);
CREATE INDEX backup_jobs_dispatched ON backup_jobs (started_at) WHERE state = 'dispatched';

CREATE TABLE backup_findings (
    node_id  TEXT NOT NULL REFERENCES nodes (id),
    source   TEXT NOT NULL,
    summary  TEXT NOT NULL,
    found_at INTEGER NOT NULL,
    PRIMARY KEY (node_id, source)
) STRICT;
