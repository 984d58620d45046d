-- Drivers on the plane: which drivers an admin enabled, the accounts they serve (credentials sealed by
-- the plane under its master key before they reach this database), and the audit log of driver calls.

CREATE TABLE drivers (
    name       text PRIMARY KEY,
    enabled    boolean NOT NULL,
    digest     text NOT NULL DEFAULT '',
    changed_at timestamptz NOT NULL,
    changed_by text NOT NULL DEFAULT ''
);

CREATE TABLE driver_accounts (
    id         text PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    driver     text NOT NULL,
    settings   json NOT NULL,
    -- The credential sealed with AES-256-GCM under the master key named by key_id; never the credential.
    sealed     bytea NOT NULL,
    key_id     text NOT NULL,
    created_at timestamptz NOT NULL,
    created_by text NOT NULL
);
CREATE INDEX driver_accounts_driver ON driver_accounts (driver, name);

CREATE TABLE driver_calls (
    id          text PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor       text NOT NULL,
    account     text NOT NULL,
    driver      text NOT NULL,
    operation   text NOT NULL,
    target      text NOT NULL,
    code        text NOT NULL,
    duration_ms bigint NOT NULL
);
CREATE INDEX driver_calls_driver ON driver_calls (driver, id);
CREATE INDEX driver_calls_account ON driver_calls (account, id);
