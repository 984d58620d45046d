-- Backups: the buckets nodes back up to (the secret sealed by the plane under its master key), the
-- policies (node_id '' is the fleet's default), the jobs the plane dispatched with its verdict on each,
-- and the findings its witness and health checks keep per node, which the backup detectors read.
CREATE TABLE backup_targets (
    name           text PRIMARY KEY,
    endpoint       text NOT NULL,
    region         text NOT NULL,
    bucket         text NOT NULL,
    prefix         text NOT NULL,
    access_key_id  text NOT NULL,
    virtual_hosted boolean NOT NULL,
    recovery       text NOT NULL,
    sealed         bytea NOT NULL,
    key_id         text NOT NULL,
    created_by     text NOT NULL,
    created_at     timestamptz NOT NULL
);

CREATE TABLE backup_policies (
    node_id        text PRIMARY KEY,
    enabled        boolean NOT NULL,
    target         text NOT NULL,
    every_s        bigint NOT NULL,
    keep_days      integer NOT NULL,
    verify_every_s bigint NOT NULL,
    paths          text NOT NULL,
    databases      text NOT NULL,
    updated_by     text NOT NULL,
    updated_at     timestamptz NOT NULL
);

CREATE TABLE backup_jobs (
    job_id     text PRIMARY KEY REFERENCES jobs (id),
    node_id    text NOT NULL REFERENCES nodes (id),
    purpose    text NOT NULL CHECK (purpose IN ('backup', 'verify')),
    target     text NOT NULL,
    run        text NOT NULL,
    parent     text NOT NULL,
    chain      text NOT NULL,
    objects    integer NOT NULL,
    started_at timestamptz NOT NULL,
    state      text NOT NULL,
    kind       text NOT NULL,
    bytes      bigint NOT NULL,
    detail     text NOT NULL,
    judged_at  timestamptz
);
CREATE INDEX backup_jobs_node ON backup_jobs (node_id, started_at DESC);
CREATE INDEX backup_jobs_dispatched ON backup_jobs (started_at) WHERE state = 'dispatched';

CREATE TABLE backup_findings (
    node_id  text NOT NULL REFERENCES nodes (id),
    source   text NOT NULL,
    summary  text NOT NULL,
    found_at timestamptz NOT NULL,
    PRIMARY KEY (node_id, source)
);
