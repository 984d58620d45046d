-- Provisionings: machines a cloud driver makes for the plane, followed from the create call to their
-- node's join, with a timeline; and on joins, the provisioning whose one-time token a join carried and
-- why the plane left it for a person.

ALTER TABLE joins ADD COLUMN provisioning_id text NOT NULL DEFAULT '';
ALTER TABLE joins ADD COLUMN hold_reason text NOT NULL DEFAULT '';

CREATE TABLE provisionings (
    id               text PRIMARY KEY,
    name             text NOT NULL,
    account          text NOT NULL,
    region           text NOT NULL,
    type             text NOT NULL,
    image            text NOT NULL,
    platform         text NOT NULL DEFAULT 'linux-amd64',
    labels           jsonb NOT NULL DEFAULT '{}',
    dns_account      text NOT NULL DEFAULT '',
    dns_zone         text NOT NULL DEFAULT '',
    tag              text NOT NULL,
    state            text NOT NULL CHECK (state IN ('creating', 'booting', 'installing', 'joining', 'joined', 'failed', 'cleaned_up')),
    state_at         timestamptz NOT NULL,
    instance_id      text NOT NULL DEFAULT '',
    addresses        jsonb NOT NULL DEFAULT '[]',
    -- lowercase hex sha256 of the one-time join token; the token itself is never stored
    token_hash       text NOT NULL DEFAULT '',
    token_expires_at timestamptz,
    token_used_at    timestamptz,
    join_id          text NOT NULL DEFAULT '',
    node_id          text NOT NULL DEFAULT '',
    reason           text NOT NULL DEFAULT '',
    cleanup          text NOT NULL DEFAULT '' CHECK (cleanup IN ('', 'deleted', 'failed')),
    cleanup_at       timestamptz,
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    finished_at      timestamptz,
    -- the instance's transfer this month as the provider last reported it (the transfer watch)
    transfer_used      bigint NOT NULL DEFAULT 0,
    transfer_allowance bigint NOT NULL DEFAULT 0,
    transfer_at        timestamptz
);
-- A name is held by one live provisioning at a time.
CREATE UNIQUE INDEX provisionings_live_name ON provisionings (name) WHERE state IN ('creating', 'booting', 'installing', 'joining');
CREATE INDEX provisionings_token ON provisionings (token_hash) WHERE token_hash <> '';

CREATE TABLE provisioning_events (
    seq             bigint GENERATED ALWAYS AS IDENTITY,
    provisioning_id text NOT NULL REFERENCES provisionings (id),
    at              timestamptz NOT NULL,
    actor           text NOT NULL,
    state           text NOT NULL,
    detail          text NOT NULL
);
CREATE INDEX provisioning_events_by ON provisioning_events (provisioning_id, at);
