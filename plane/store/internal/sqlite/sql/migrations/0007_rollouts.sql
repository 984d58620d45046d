-- Staged rollouts: node labels and target releases, the fleet's target, per-node leases, and rollouts
-- with their steps and audit events.

ALTER TABLE nodes ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
-- The release the plane serves this node; 0 before any release is published.
ALTER TABLE nodes ADD COLUMN target_sequence INTEGER NOT NULL DEFAULT 0;

-- One row: the release new nodes are given. Until now every node followed the newest release, so a
-- fleet upgraded in place starts with every node (and the fleet) targeted at it.
CREATE TABLE fleet (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    target_sequence INTEGER NOT NULL
) STRICT;
INSERT INTO fleet (id, target_sequence) SELECT 1, COALESCE(MAX(sequence), 0) FROM releases;
UPDATE nodes SET target_sequence = (SELECT target_sequence FROM fleet WHERE id = 1);

-- Named leases on a subject (a node's id, or a rollout's): one holder at a time until expires_at.
CREATE TABLE leases (
    subject     TEXT NOT NULL,
    name        TEXT NOT NULL,
    holder      TEXT NOT NULL,
    purpose     TEXT NOT NULL,
    acquired_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (subject, name)
) STRICT, WITHOUT ROWID;

CREATE TABLE rollouts (
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL CHECK (kind IN ('release', 'job')),
    release_sequence INTEGER NOT NULL DEFAULT 0,
    word             TEXT NOT NULL DEFAULT '',
    params           TEXT,
    preflight_word   TEXT NOT NULL DEFAULT '',
    preflight_params TEXT,
    verify_word      TEXT NOT NULL DEFAULT '',
    verify_params    TEXT,
    selector         TEXT NOT NULL,
    stages           TEXT NOT NULL,
    fleet_wide       INTEGER NOT NULL DEFAULT 0,
    max_parallel     INTEGER NOT NULL,
    error_budget     INTEGER NOT NULL,
    step_timeout_ms  INTEGER NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('running', 'paused', 'halted', 'completed', 'aborted', 'reverted')),
    misses           INTEGER NOT NULL DEFAULT 0,
    halt_node        TEXT NOT NULL DEFAULT '',
    halt_reason      TEXT NOT NULL DEFAULT '',
    created_by       TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    finished_at      INTEGER
) STRICT;
CREATE INDEX rollouts_live ON rollouts (id) WHERE state = 'running';

CREATE TABLE rollout_steps (
    rollout_id      TEXT NOT NULL REFERENCES rollouts (id),
    node_id         TEXT NOT NULL,
    node_name       TEXT NOT NULL,
    stage           INTEGER NOT NULL,
    position        INTEGER NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'running', 'passed', 'failed', 'skipped')),
    phase           TEXT NOT NULL DEFAULT '',
    job_id          TEXT NOT NULL DEFAULT '',
    previous_target INTEGER NOT NULL DEFAULT 0,
    reason          TEXT NOT NULL DEFAULT '',
    started_at      INTEGER,
    phase_at        INTEGER,
    finished_at     INTEGER,
    PRIMARY KEY (rollout_id, node_id)
) STRICT;

CREATE TABLE rollout_events (
    rollout_id TEXT NOT NULL REFERENCES rollouts (id),
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    at         INTEGER NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    detail     TEXT NOT NULL DEFAULT ''
) STRICT;
