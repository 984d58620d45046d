-- The plane's first schema: enrolment, nodes, nonces, jobs, admin tokens, releases and artifacts.
-- Tables are STRICT. Times are INTEGER microseconds since the epoch, UTC; JSON documents are TEXT kept as
-- given; booleans are INTEGER 0 or 1.

CREATE TABLE nodes (
    id                 TEXT PRIMARY KEY,
    name               TEXT NOT NULL,
    node_key           TEXT NOT NULL,
    key_fingerprint    TEXT NOT NULL UNIQUE,
    addresses          TEXT NOT NULL,
    state              TEXT NOT NULL CHECK (state IN ('active', 'disconnected', 'left')),
    created_at         INTEGER NOT NULL,
    last_seen_at       INTEGER,
    ended_at           INTEGER,
    agent_version      TEXT NOT NULL DEFAULT '',
    statement_sequence INTEGER NOT NULL DEFAULT 0,
    statement_digest   TEXT NOT NULL DEFAULT '',
    vocabulary         TEXT NOT NULL DEFAULT '[]',
    recipes            TEXT NOT NULL DEFAULT '[]',
    idle               INTEGER NOT NULL DEFAULT 1,
    claim_size_cap     INTEGER NOT NULL DEFAULT 0,
    refusals           INTEGER NOT NULL DEFAULT 0
) STRICT;
-- Names are how operators address nodes, so two active nodes never share one.
CREATE UNIQUE INDEX nodes_active_name ON nodes (name) WHERE state = 'active';

CREATE TABLE joins (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    node_key        TEXT NOT NULL,
    key_fingerprint TEXT NOT NULL,
    addresses       TEXT NOT NULL,
    source_address  TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    decided_at      INTEGER,
    decided_by      TEXT NOT NULL DEFAULT '',
    node_id         TEXT REFERENCES nodes (id)
) STRICT;
CREATE UNIQUE INDEX joins_pending_key ON joins (key_fingerprint) WHERE status = 'pending';
CREATE INDEX joins_pending_source ON joins (source_address) WHERE status = 'pending';

-- A key rejected at enrolment, or whose node was disconnected or left, never joins again.
CREATE TABLE retired_keys (
    key_fingerprint TEXT PRIMARY KEY,
    reason          TEXT NOT NULL,
    retired_at      INTEGER NOT NULL
) STRICT;

CREATE TABLE nonces (
    key_id     TEXT NOT NULL,
    nonce      TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (key_id, nonce)
) STRICT, WITHOUT ROWID;
CREATE INDEX nonces_expires ON nonces (expires_at);

CREATE TABLE jobs (
    id              TEXT PRIMARY KEY,
    node_id         TEXT NOT NULL REFERENCES nodes (id),
    word            TEXT NOT NULL,
    word_version    TEXT NOT NULL,
    word_digest     TEXT NOT NULL,
    class           TEXT NOT NULL,
    params          TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('queued', 'running', 'completed', 'failed', 'refused', 'lost', 'cancelled')),
    budget_ms       INTEGER NOT NULL CHECK (budget_ms > 0),
    created_by      TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    claimed_at      INTEGER,
    deadline_at     INTEGER,
    finished_at     INTEGER,
    outcome_code    TEXT NOT NULL DEFAULT '',
    outcome_message TEXT NOT NULL DEFAULT '',
    output          TEXT,
    transcript      TEXT NOT NULL DEFAULT '',
    audit           TEXT,
    duration_ms     INTEGER NOT NULL DEFAULT 0,
    finished_by     TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX jobs_queued ON jobs (node_id, id) WHERE state = 'queued';
-- One job at a time per node, held by the database as well as by the single writer.
CREATE UNIQUE INDEX jobs_one_running ON jobs (node_id) WHERE state = 'running';
CREATE INDEX jobs_running_deadline ON jobs (deadline_at) WHERE state = 'running';
CREATE INDEX jobs_node ON jobs (node_id, id);
CREATE INDEX jobs_state ON jobs (state, id);

CREATE TABLE tokens (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    token_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;

CREATE TABLE releases (
    sequence         INTEGER PRIMARY KEY CHECK (sequence > 0),
    version          TEXT NOT NULL,
    statement_digest TEXT NOT NULL,
    bundle           BLOB NOT NULL,
    published_at     INTEGER NOT NULL,
    published_by     TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE TABLE artifacts (
    digest     TEXT PRIMARY KEY,
    size       INTEGER NOT NULL,
    data       BLOB NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE release_artifacts (
    release_sequence INTEGER NOT NULL REFERENCES releases (sequence),
    name             TEXT NOT NULL,
    digest           TEXT NOT NULL REFERENCES artifacts (digest),
    PRIMARY KEY (release_sequence, name)
) STRICT;
CREATE INDEX release_artifacts_digest ON release_artifacts (digest);
