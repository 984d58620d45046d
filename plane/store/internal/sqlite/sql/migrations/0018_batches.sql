-- A batch is one word run on every node a selector matched: one job a node, created together. Its
-- jobs beyond the batch's bound on parallel jobs wait held (queued, never handed out) until the jobs
-- room releases them; more failures than the error budget stop the batch, cancelling what waits.
CREATE TABLE batches (
    id           TEXT PRIMARY KEY,
    word         TEXT NOT NULL,
    selector     TEXT NOT NULL,
    class        TEXT NOT NULL,
    params       TEXT NOT NULL,
    max_parallel INTEGER NOT NULL CHECK (max_parallel >= 0),
    error_budget INTEGER NOT NULL CHECK (error_budget >= -1),
    jobs         INTEGER NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    stopped_at   INTEGER,
    stop_reason  TEXT NOT NULL DEFAULT ''
) STRICT;

-- The nodes a selector matched that could not be given the job (the word is not in their vocabulary),
-- named so that a batch never drops a node silently.
CREATE TABLE batch_skips (
    batch_id  TEXT NOT NULL REFERENCES batches (id),
    node_id   TEXT NOT NULL,
    node_name TEXT NOT NULL,
    reason    TEXT NOT NULL,
    PRIMARY KEY (batch_id, node_id)
) STRICT;

ALTER TABLE jobs ADD COLUMN batch_id TEXT REFERENCES batches (id);
ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_batch ON jobs (batch_id, id) WHERE batch_id IS NOT NULL;
CREATE INDEX jobs_batch_state ON jobs (batch_id, state, held, id) WHERE batch_id IS NOT NULL;
