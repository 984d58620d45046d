-- Web UI sessions, in the store so that every replica accepts a session any replica opened. The
-- cookie's value is the secret: only its sha256 is kept. A session names its token, which is read
-- again on every request, so revoking the token ends its sessions at once.
CREATE TABLE ui_sessions (
    id_hash    TEXT PRIMARY KEY,
    token_id   TEXT NOT NULL REFERENCES tokens (id),
    csrf       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX ui_sessions_expires ON ui_sessions (expires_at);
