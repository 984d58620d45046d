-- The audit trail: one row per change asked through the admin API or the web UI, written with code
-- 'pending' before the change and completed with its outcome after. No request body is kept.
CREATE TABLE audit_events (
    id          TEXT PRIMARY KEY,
    at          INTEGER NOT NULL,
    via         TEXT NOT NULL,
    actor_id    TEXT NOT NULL,
    actor       TEXT NOT NULL,
    address     TEXT NOT NULL,
    operation   TEXT NOT NULL,
    target      TEXT NOT NULL,
    status      INTEGER NOT NULL,
    code        TEXT NOT NULL,
    duration_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_actor ON audit_events (actor, id);
CREATE INDEX audit_events_operation ON audit_events (operation, id);
