-- One-time join tokens for machines that already exist (lexicon nodes install-command): only the
-- token's sha256 is kept. A join that spends one is approved at once when approve is set.
CREATE TABLE enrolments (
    id         TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    labels     TEXT NOT NULL,
    approve    INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER,
    join_id    TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
