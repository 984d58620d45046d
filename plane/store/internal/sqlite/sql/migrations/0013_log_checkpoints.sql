-- The transparency-log checkpoints each node holds, one a log, as its last full report said: its view
-- of each log. Two nodes whose views of one log contradict each other are a split view
-- (plane:log_split_view).
CREATE TABLE node_checkpoints (
    node_id     TEXT NOT NULL REFERENCES nodes (id),
    origin      TEXT NOT NULL,
    size        INTEGER NOT NULL CHECK (size > 0),
    root_hash   TEXT NOT NULL,
    reported_at INTEGER NOT NULL,
    PRIMARY KEY (node_id, origin)
) STRICT;
CREATE INDEX node_checkpoints_view ON node_checkpoints (origin, size, root_hash);

-- The plane's verdicts on pairs of checkpoints of one log (old smaller than new): whether the log
-- proved the old tree a prefix of the new. Two signed checkpoints either are one history or are not,
-- so a verdict never goes stale; one on a pair no node holds any more is forgotten.
CREATE TABLE log_consistency (
    origin     TEXT NOT NULL,
    old_size   INTEGER NOT NULL,
    old_root   TEXT NOT NULL,
    new_size   INTEGER NOT NULL,
    new_root   TEXT NOT NULL,
    consistent INTEGER NOT NULL,
    detail     TEXT NOT NULL,
    checked_at INTEGER NOT NULL,
    PRIMARY KEY (origin, old_size, old_root, new_size, new_root)
) STRICT;
