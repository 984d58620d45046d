-- The plane watches itself. An incident may concern the plane rather than a node: its node is then
-- NULL and its subject names what it is about (a driver, a replica, a route pattern). A condition is
-- (node or none, source, subject); node incidents keep the subject ''.
ALTER TABLE incidents ALTER COLUMN node_id DROP NOT NULL;
ALTER TABLE incidents ADD COLUMN subject text NOT NULL DEFAULT '';
DROP INDEX incidents_one_open;
CREATE UNIQUE INDEX incidents_one_open ON incidents ((COALESCE(node_id, '')), source, subject) WHERE condition = 'open';
DROP INDEX incidents_condition;
CREATE INDEX incidents_condition ON incidents ((COALESCE(node_id, '')), source, subject, id);

-- Every plane replica heartbeats here: what it is, where, what it runs, and its memory (the peak kept
-- across restarts of the same replica id).
CREATE TABLE replicas (
    id                 text PRIMARY KEY,
    version            text NOT NULL,
    address            text NOT NULL,
    started_at         timestamptz NOT NULL,
    heartbeat_at       timestamptz NOT NULL,
    lease_ms           bigint NOT NULL CHECK (lease_ms > 0),
    services           jsonb NOT NULL,
    heap_bytes         bigint NOT NULL DEFAULT 0,
    rss_bytes          bigint NOT NULL DEFAULT 0,
    peak_heap_bytes    bigint NOT NULL DEFAULT 0,
    peak_rss_bytes     bigint NOT NULL DEFAULT 0,
    peak_at            timestamptz,
    memory_limit_bytes bigint NOT NULL DEFAULT 0,
    memory_alert       double precision NOT NULL DEFAULT 0
);

-- Requests each replica served per route pattern and minute, and how many answered 5xx (codes: status
-- to count). Written by the replica's heartbeat; read by the route detector.
CREATE TABLE route_counts (
    replica_id text NOT NULL REFERENCES replicas (id) ON DELETE CASCADE,
    route      text NOT NULL,
    minute     timestamptz NOT NULL,
    requests   bigint NOT NULL,
    failures   bigint NOT NULL,
    codes      jsonb NOT NULL,
    PRIMARY KEY (replica_id, route, minute)
);
CREATE INDEX route_counts_minute ON route_counts (minute);

-- The driver detector reads the calls of the last minutes.
CREATE INDEX driver_calls_at ON driver_calls (at);
