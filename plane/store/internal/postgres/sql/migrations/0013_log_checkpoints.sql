-- The transparency-log checkpoints each node holds, one a log, as its last full report said: its view
-- of each log. Two nodes whose views of one log contradict each other are a split view
-- (plane:log_split_view).
CREATE TABLE node_checkpoints (
    node_id     text NOT NULL REFERENCES nodes (id),
    origin      text NOT NULL,
    size        bigint NOT NULL CHECK (size > 0),
    root_hash   text NOT NULL,
    reported_at timestamptz NOT NULL,
    PRIMARY KEY (node_id, origin)
);
CREATE INDEX node_checkpoints_view ON node_checkpoints (origin, size, root_hash);

-- The plane's verdicts on pairs of checkpoints of one log (old smaller than new): whether the log
-- proved the old tree a prefix of the new. Two signed checkpoints either are one history or are not,
-- so a verdict never goes stale; one on a pair no node holds any more is forgotten.
CREATE TABLE log_consistency (
    origin     text NOT NULL,
    old_size   bigint NOT NULL,
    old_root   text NOT NULL,
    new_size   bigint NOT NULL,
    new_root   text NOT NULL,
    consistent boolean NOT NULL,
    detail     text NOT NULL,
    checked_at timestamptz NOT NULL,
    PRIMARY KEY (origin, old_size, old_root, new_size, new_root)
);
