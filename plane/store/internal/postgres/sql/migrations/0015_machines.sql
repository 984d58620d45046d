-- The machine inventory's third source: machines written down by hand, with who keeps them, what for,
-- their OS release and the day they should be gone; saving or confirming one records when.
CREATE TABLE machines (
    id           text PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    purpose      text NOT NULL,
    owner        text NOT NULL,
    os_release   text NOT NULL,
    retire_by    timestamptz,
    confirmed_at timestamptz NOT NULL,
    confirmed_by text NOT NULL,
    created_at   timestamptz NOT NULL,
    created_by   text NOT NULL
);
-- The inventory reads each node's newest report of a word.
CREATE INDEX jobs_node_word_finished ON jobs (node_id, word, finished_at) WHERE state = 'completed';
