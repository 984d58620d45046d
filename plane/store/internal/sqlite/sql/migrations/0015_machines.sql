-- The machine inventory's third source: machines written down by hand, with who keeps them, what for,
-- their OS release and the day they should be gone; saving or confirming one records when.
CREATE TABLE machines (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    purpose      TEXT NOT NULL,
    owner        TEXT NOT NULL,
    os_release   TEXT NOT NULL,
    retire_by    INTEGER,
    confirmed_at INTEGER NOT NULL,
    confirmed_by TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    created_by   TEXT NOT NULL
) STRICT;
-- The inventory reads each node's newest report of a word.
CREATE INDEX jobs_node_word_finished ON jobs (node_id, word, finished_at) WHERE state = 'completed';
