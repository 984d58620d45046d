-- Drivers on the plane: which drivers an admin enabled, the accounts they serve (credentials sealed by
-- the plane under its master key before they reach this file), and the audit log of driver calls.

CREATE TABLE drivers (
    name       TEXT PRIMARY KEY,
    enabled    INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    digest     TEXT NOT NULL DEFAULT '',
    changed_at INTEGER NOT NULL,
    changed_by TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE TABLE driver_accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    driver     TEXT NOT NULL,
    settings   TEXT NOT NULL,
    -- The credential sealed with AES-256-GCM under the master key named by key_id; never the credential.
    sealed     BLOB NOT NULL,
    key_id     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL
) STRICT;
CREATE INDEX driver_accounts_driver ON driver_accounts (driver, name);

CREATE TABLE driver_calls (
    id          TEXT PRIMARY KEY,
    at          INTEGER NOT NULL,
    actor       TEXT NOT NULL,
    account     TEXT NOT NULL,
    driver      TEXT NOT NULL,
    operation   TEXT NOT NULL,
    target      TEXT NOT NULL,
    code        TEXT NOT NULL,
    duration_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX driver_calls_driver ON driver_calls (driver, id);
CREATE INDEX driver_calls_account ON driver_calls (account, id);
