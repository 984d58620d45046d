-- The plane's first schema: enrolment, nodes, nonces, jobs, admin tokens, releases and artifacts.
-- Times are timestamptz; documents we build (addresses, vocabulary, recipes) are jsonb; documents callers
-- hand us (params, output, audit) are json, which keeps their bytes as given.

CREATE TABLE nodes (
    id                 text PRIMARY KEY,
    name               text NOT NULL,
    node_key           text NOT NULL,
    key_fingerprint    text NOT NULL UNIQUE,
    addresses          jsonb NOT NULL,
    state              text NOT NULL CHECK (state IN ('active', 'disconnected', 'left')),
    created_at         timestamptz NOT NULL,
    last_seen_at       timestamptz,
    ended_at           timestamptz,
    agent_version      text NOT NULL DEFAULT '',
    statement_sequence bigint NOT NULL DEFAULT 0,
    statement_digest   text NOT NULL DEFAULT '',
    vocabulary         jsonb NOT NULL DEFAULT '[]',
    recipes            jsonb NOT NULL DEFAULT '[]',
    idle               boolean NOT NULL DEFAULT true,
    claim_size_cap     bigint NOT NULL DEFAULT 0,
    refusals           bigint NOT NULL DEFAULT 0
);
-- Names are how operators address nodes, so two active nodes never share one.
CREATE UNIQUE INDEX nodes_active_name ON nodes (name) WHERE state = 'active';

CREATE TABLE joins (
    id              text PRIMARY KEY,
    name            text NOT NULL,
    node_key        text NOT NULL,
    key_fingerprint text NOT NULL,
    addresses       jsonb NOT NULL,
    source_address  text NOT NULL,
    status          text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    decided_at      timestamptz,
    decided_by      text NOT NULL DEFAULT '',
    node_id         text REFERENCES nodes (id)
);
CREATE UNIQUE INDEX joins_pending_key ON joins (key_fingerprint) WHERE status = 'pending';
CREATE INDEX joins_pending_source ON joins (source_address) WHERE status = 'pending';

-- A key rejected at enrolment, or whose node was disconnected or left, never joins again.
CREATE TABLE retired_keys (
    key_fingerprint text PRIMARY KEY,
    reason          text NOT NULL,
    retired_at      timestamptz NOT NULL
);

CREATE TABLE nonces (
    key_id     text NOT NULL,
    nonce      text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (key_id, nonce)
);
CREATE INDEX nonces_expires ON nonces (expires_at);

CREATE TABLE jobs (
    id              text PRIMARY KEY,
    node_id         text NOT NULL REFERENCES nodes (id),
    word            text NOT NULL,
    word_version    text NOT NULL,
    word_digest     text NOT NULL,
    class           text NOT NULL,
    params          json NOT NULL,
    state           text NOT NULL CHECK (state IN ('queued', 'running', 'completed', 'failed', 'refused', 'lost', 'cancelled')),
    budget_ms       bigint NOT NULL CHECK (budget_ms > 0),
    created_by      text NOT NULL,
    created_at      timestamptz NOT NULL,
    claimed_at      timestamptz,
    deadline_at     timestamptz,
    finished_at     timestamptz,
    outcome_code    text NOT NULL DEFAULT '',
    outcome_message text NOT NULL DEFAULT '',
    output          json,
    transcript      text NOT NULL DEFAULT '',
    audit           json,
    duration_ms     bigint NOT NULL DEFAULT 0,
    finished_by     text NOT NULL DEFAULT ''
);
CREATE INDEX jobs_queued ON jobs (node_id, id) WHERE state = 'queued';
-- One job at a time per node, held by the database as well as by the claim's row lock.
CREATE UNIQUE INDEX jobs_one_running ON jobs (node_id) WHERE state = 'running';
CREATE INDEX jobs_running_deadline ON jobs (deadline_at) WHERE state = 'running';
CREATE INDEX jobs_node ON jobs (node_id, id);
CREATE INDEX jobs_state ON jobs (state, id);

CREATE TABLE tokens (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    role       text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    token_hash text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);

CREATE TABLE releases (
    sequence         bigint PRIMARY KEY CHECK (sequence > 0),
    version          text NOT NULL,
    statement_digest text NOT NULL,
    bundle           bytea NOT NULL,
    published_at     timestamptz NOT NULL,
    published_by     text NOT NULL DEFAULT ''
);

CREATE TABLE artifacts (
    digest     text PRIMARY KEY,
    size       bigint NOT NULL,
    data       bytea NOT NULL,
    created_at timestamptz NOT NULL
);
-- Modules and agent binaries are served whole and compress poorly: keep them out of line, uncompressed.
ALTER TABLE artifacts ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE release_artifacts (
    release_sequence bigint NOT NULL REFERENCES releases (sequence),
    name             text NOT NULL,
    digest           text NOT NULL REFERENCES artifacts (digest),
    PRIMARY KEY (release_sequence, name)
);
CREATE INDEX release_artifacts_digest ON release_artifacts (digest);
