-- Web UI sessions of people signed in through single sign-on. As ui_sessions, keyed by the cookie's
-- sha256. The session holds the role the provider's groups gave at the last refresh, and the refresh
-- token sealed under the master key; at refresh_at a replica asks the provider again.
CREATE TABLE sso_sessions (
    id_hash        TEXT PRIMARY KEY,
    subject        TEXT NOT NULL,
    name           TEXT NOT NULL,
    role           TEXT NOT NULL,
    csrf           TEXT NOT NULL,
    refresh_sealed BLOB NOT NULL,
    refresh_at     INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX sso_sessions_expires ON sso_sessions (expires_at);
