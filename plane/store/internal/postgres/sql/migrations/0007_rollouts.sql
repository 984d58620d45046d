-- Staged rollouts: node labels and target releases, the fleet's target, per-node leases, and rollouts
-- with their steps and audit events.

ALTER TABLE nodes ADD COLUMN labels jsonb NOT NULL DEFAULT '{}';
-- The release the plane serves this node; 0 before any release is published.
ALTER TABLE nodes ADD COLUMN target_sequence bigint NOT NULL DEFAULT 0;

-- One row: the release new nodes are given. Until now every node followed the newest release, so a
-- fleet upgraded in place starts with every node (and the fleet) targeted at it.
CREATE TABLE fleet (
    id              integer PRIMARY KEY CHECK (id = 1),
    target_sequence bigint NOT NULL
);
INSERT INTO fleet (id, target_sequence) SELECT 1, COALESCE(MAX(sequence), 0) FROM releases;
UPDATE nodes SET target_sequence = (SELECT target_sequence FROM fleet WHERE id = 1);

-- Named leases on a subject (a node's id, or a rollout's): one holder at a time until expires_at.
CREATE TABLE leases (
    subject     text NOT NULL,
    name        text NOT NULL,
    holder      text NOT NULL,
    purpose     text NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (subject, name)
);

CREATE TABLE rollouts (
    id               text PRIMARY KEY,
    kind             text NOT NULL CHECK (kind IN ('release', 'job')),
    release_sequence bigint NOT NULL DEFAULT 0,
    word             text NOT NULL DEFAULT '',
    params           json,
    preflight_word   text NOT NULL DEFAULT '',
    preflight_params json,
    verify_word      text NOT NULL DEFAULT '',
    verify_params    json,
    selector         text NOT NULL,
    stages           jsonb NOT NULL,
    fleet_wide       boolean NOT NULL DEFAULT false,
    max_parallel     integer NOT NULL,
    error_budget     integer NOT NULL,
    step_timeout_ms  bigint NOT NULL,
    state            text NOT NULL CHECK (state IN ('running', 'paused', 'halted', 'completed', 'aborted', 'reverted')),
    misses           integer NOT NULL DEFAULT 0,
    halt_node        text NOT NULL DEFAULT '',
    halt_reason      text NOT NULL DEFAULT '',
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    finished_at      timestamptz
);
CREATE INDEX rollouts_live ON rollouts (id) WHERE state = 'running';

CREATE TABLE rollout_steps (
    rollout_id      text NOT NULL REFERENCES rollouts (id),
    node_id         text NOT NULL,
    node_name       text NOT NULL,
    stage           integer NOT NULL,
    position        integer NOT NULL,
    state           text NOT NULL CHECK (state IN ('pending', 'running', 'passed', 'failed', 'skipped')),
    phase           text NOT NULL DEFAULT '',
    job_id          text NOT NULL DEFAULT '',
    previous_target bigint NOT NULL DEFAULT 0,
    reason          text NOT NULL DEFAULT '',
    started_at      timestamptz,
    phase_at        timestamptz,
    finished_at     timestamptz,
    PRIMARY KEY (rollout_id, node_id)
);

CREATE TABLE rollout_events (
    rollout_id text NOT NULL REFERENCES rollouts (id),
    seq        bigserial,
    at         timestamptz NOT NULL,
    actor      text NOT NULL,
    action     text NOT NULL,
    detail     text NOT NULL DEFAULT '',
    PRIMARY KEY (rollout_id, seq)
);
