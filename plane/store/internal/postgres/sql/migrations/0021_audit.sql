-- The audit trail: one row per change asked through the admin API or the web UI, written with code
-- 'pending' before the change and completed with its outcome after. No request body is kept.
CREATE TABLE audit_events (
    id          text PRIMARY KEY,
    at          timestamptz NOT NULL,
    via         text NOT NULL,
    actor_id    text NOT NULL,
    actor       text NOT NULL,
    address     text NOT NULL,
    operation   text NOT NULL,
    target      text NOT NULL,
    status      integer NOT NULL,
    code        text NOT NULL,
    duration_ms bigint NOT NULL
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_actor ON audit_events (actor, id);
CREATE INDEX audit_events_operation ON audit_events (operation, id);
