-- One-time join tokens for machines that already exist (lexicon nodes install-command): only the
-- token's sha256 is kept. A join that spends one is approved at once when approve is set.
CREATE TABLE enrolments (
    id         text PRIMARY KEY,
    token_hash text NOT NULL UNIQUE,
    labels     text NOT NULL,
    approve    boolean NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    join_id    text NOT NULL,
    created_by text NOT NULL,
    created_at timestamptz NOT NULL
);
