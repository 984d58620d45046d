-- A batch is one word run on every node a selector matched: one job a node, created together. Its
-- jobs beyond the batch's bound on parallel jobs wait held (queued, never handed out) until the jobs
-- room releases them; more failures than the error budget stop the batch, cancelling what waits.
CREATE TABLE batches (
    id           text PRIMARY KEY,
    word         text NOT NULL,
    selector     text NOT NULL,
    class        text NOT NULL,
    params       json NOT NULL,
    max_parallel integer NOT NULL CHECK (max_parallel >= 0),
    error_budget integer NOT NULL CHECK (error_budget >= -1),
    jobs         integer NOT NULL,
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL,
    stopped_at   timestamptz,
    stop_reason  text NOT NULL DEFAULT ''
);

-- The nodes a selector matched that could not be given the job (the word is not in their vocabulary),
-- named so that a batch never drops a node silently.
CREATE TABLE batch_skips (
    batch_id  text NOT NULL REFERENCES batches (id),
    node_id   text NOT NULL,
    node_name text NOT NULL,
    reason    text NOT NULL,
    PRIMARY KEY (batch_id, node_id)
);

ALTER TABLE jobs ADD COLUMN batch_id text REFERENCES batches (id);
ALTER TABLE jobs ADD COLUMN held boolean NOT NULL DEFAULT false;
CREATE INDEX jobs_batch ON jobs (batch_id, id) WHERE batch_id IS NOT NULL;
CREATE INDEX jobs_batch_state ON jobs (batch_id, state, held, id) WHERE batch_id IS NOT NULL;
