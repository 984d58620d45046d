-- The plane watches itself. An incident may concern the plane rather than a node: its node is then
-- NULL and its subject names what it is about (a driver, a replica, a route pattern). A condition is
-- (node or none, source, subject); node incidents keep the subject ''. SQLite cannot drop a NOT NULL in
-- place: the table is built again under the same name, with foreign-key checks deferred to the commit
-- (events and notifications reference the old rows and find the same ids in the new table), as
-- 0004_notify_cleared does for notifications.
PRAGMA defer_foreign_keys = ON;

CREATE TABLE incidents_copy AS SELECT * FROM incidents;
DROP TABLE incidents;

CREATE TABLE incidents (
    id            TEXT PRIMARY KEY,
    node_id       TEXT REFERENCES nodes (id),
    source        TEXT NOT NULL,
    subject       TEXT NOT NULL DEFAULT '',
    severity      TEXT NOT NULL CHECK (severity IN ('critical', 'warning')),
    condition     TEXT NOT NULL CHECK (condition IN ('open', 'cleared')),
    triage        TEXT NOT NULL CHECK (triage IN ('new', 'snoozed', 'resolved', 'ignored')),
    snoozed_until INTEGER,
    summary       TEXT NOT NULL,
    case_id       INTEGER NOT NULL DEFAULT 0,
    opened_at     INTEGER NOT NULL,
    changed_at    INTEGER NOT NULL,
    cleared_at    INTEGER,
    triaged_at    INTEGER,
    triaged_by    TEXT NOT NULL DEFAULT '',
    reason        TEXT NOT NULL DEFAULT '',
    events        INTEGER NOT NULL DEFAULT 0,
    CHECK ((triage = 'snoozed') = (snoozed_until IS NOT NULL))
) STRICT;
INSERT INTO incidents (id, node_id, source, subject, severity, condition, triage, snoozed_until, summary, case_id,
                       opened_at, changed_at, cleared_at, triaged_at, triaged_by, reason, events)
SELECT id, node_id, source, '', severity, condition, triage, snoozed_until, summary, case_id,
       opened_at, changed_at, cleared_at, triaged_at, triaged_by, reason, events
FROM incidents_copy;
DROP TABLE incidents_copy;
-- One open incident per condition: node (or none), source, subject.
CREATE UNIQUE INDEX incidents_one_open ON incidents (COALESCE(node_id, ''), source, subject) WHERE condition = 'open';
CREATE INDEX incidents_condition ON incidents (COALESCE(node_id, ''), source, subject, id);
CREATE INDEX incidents_open_source ON incidents (source) WHERE condition = 'open';
CREATE INDEX incidents_needs_you ON incidents (id) WHERE triage IN ('new', 'snoozed');

-- Every plane replica heartbeats here: what it is, where, what it runs, and its memory (the peak kept
-- across restarts of the same replica id).
CREATE TABLE replicas (
    id                 TEXT PRIMARY KEY,
    version            TEXT NOT NULL,
    address            TEXT NOT NULL,
    started_at         INTEGER NOT NULL,
    heartbeat_at       INTEGER NOT NULL,
    lease_ms           INTEGER NOT NULL CHECK (lease_ms > 0),
    services           TEXT NOT NULL,
    heap_bytes         INTEGER NOT NULL DEFAULT 0,
    rss_bytes          INTEGER NOT NULL DEFAULT 0,
    peak_heap_bytes    INTEGER NOT NULL DEFAULT 0,
    peak_rss_bytes     INTEGER NOT NULL DEFAULT 0,
    peak_at            INTEGER,
    memory_limit_bytes INTEGER NOT NULL DEFAULT 0,
    memory_alert       REAL NOT NULL DEFAULT 0
) STRICT;

-- Requests each replica served per route pattern and minute, and how many answered 5xx (codes: status
-- to count). Written by the replica's heartbeat; read by the route detector.
CREATE TABLE route_counts (
    replica_id TEXT NOT NULL REFERENCES replicas (id) ON DELETE CASCADE,
    route      TEXT NOT NULL,
    minute     INTEGER NOT NULL,
    requests   INTEGER NOT NULL,
    failures   INTEGER NOT NULL,
    codes      TEXT NOT NULL,
    PRIMARY KEY (replica_id, route, minute)
) STRICT;
CREATE INDEX route_counts_minute ON route_counts (minute);

-- The driver detector reads the calls of the last minutes.
CREATE INDEX driver_calls_at ON driver_calls (at);
