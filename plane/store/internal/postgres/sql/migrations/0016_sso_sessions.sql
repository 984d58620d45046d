-- Web UI sessions of people signed in through single sign-on. As ui_sessions, keyed by the cookie's
-- sha256. The session holds the role the provider's groups gave at the last refresh, and the refresh
-- token sealed under the master key; at refresh_at a replica asks the provider again.
CREATE TABLE sso_sessions (
    id_hash        text PRIMARY KEY,
    subject        text NOT NULL,
    name           text NOT NULL,
    role           text NOT NULL,
    csrf           text NOT NULL,
    refresh_sealed bytea NOT NULL,
    refresh_at     timestamptz NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX sso_sessions_expires ON sso_sessions (expires_at);
