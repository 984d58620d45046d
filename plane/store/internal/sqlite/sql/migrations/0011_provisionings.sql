-- Provisionings: machines a cloud driver makes for the plane, followed from the create call to their
-- node's join, with a timeline; and on joins, the provisioning whose one-time token a join carried and
-- why the plane left it for a person.

ALTER TABLE joins ADD COLUMN provisioning_id TEXT NOT NULL DEFAULT '';
ALTER TABLE joins ADD COLUMN hold_reason TEXT NOT NULL DEFAULT '';

CREATE TABLE provisionings (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL,
    account          TEXT NOT NULL,
    region           TEXT NOT NULL,
    type             TEXT NOT NULL,
    image            TEXT NOT NULL,
    platform         TEXT NOT NULL DEFAULT 'linux-amd64',
    labels           TEXT NOT NULL DEFAULT '{}',
    dns_account      TEXT NOT NULL DEFAULT '',
    dns_zone         TEXT NOT NULL DEFAULT '',
    tag              TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('creating', 'booting', 'installing', 'joining', 'joined', 'failed', 'cleaned_up')),
    state_at         INTEGER NOT NULL,
    instance_id      TEXT NOT NULL DEFAULT '',
    addresses        TEXT NOT NULL DEFAULT '[]',
    -- lowercase hex sha256 of the one-time join token; the token itself is never stored
    token_hash       TEXT NOT NULL DEFAULT '',
    token_expires_at INTEGER,
    token_used_at    INTEGER,
    join_id          TEXT NOT NULL DEFAULT '',
    node_id          TEXT NOT NULL DEFAULT '',
    reason           TEXT NOT NULL DEFAULT '',
    cleanup          TEXT NOT NULL DEFAULT '' CHECK (cleanup IN ('', 'deleted', 'failed')),
    cleanup_at       INTEGER,
    created_by       TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    -- the instance's transfer this month as the provider last reported it (the transfer watch)
    transfer_used      INTEGER NOT NULL DEFAULT 0,
    transfer_allowance INTEGER NOT NULL DEFAULT 0,
    transfer_at        INTEGER
) STRICT;
-- A name is held by one live provisioning at a time.
CREATE UNIQUE INDEX provisionings_live_name ON provisionings (name) WHERE state IN ('creating', 'booting', 'installing', 'joining');
CREATE INDEX provisionings_token ON provisionings (token_hash) WHERE token_hash <> '';

CREATE TABLE provisioning_events (
    provisioning_id TEXT NOT NULL REFERENCES provisionings (id),
    at              INTEGER NOT NULL,
    actor           TEXT NOT NULL,
    state           TEXT NOT NULL,
    detail          TEXT NOT NULL
) STRICT;
CREATE INDEX provisioning_events_by ON provisioning_events (provisioning_id, at);
