-- A webhook that heard an incident open also hears it clear (PagerDuty resolves the alert it opened),
-- so notifications gain the kind 'cleared'. SQLite cannot change a CHECK in place: the table is built
-- again under the same name. Foreign-key checks are deferred to the commit, so the attempts that
-- reference the old rows are matched again by the same ids in the new table.
PRAGMA defer_foreign_keys = ON;

CREATE TABLE notifications_copy AS SELECT * FROM notifications;
DROP TABLE notifications;

CREATE TABLE notifications (
    id           TEXT PRIMARY KEY,
    incident_id  TEXT NOT NULL REFERENCES incidents (id),
    event_seq    INTEGER NOT NULL,
    webhook      TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('opened', 'reopened', 'cleared')),
    state        TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      INTEGER NOT NULL,
    lease_until  INTEGER,
    lease_holder TEXT NOT NULL DEFAULT '',
    last_error   TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    finished_at  INTEGER,
    UNIQUE (incident_id, event_seq, webhook)
) STRICT;
INSERT INTO notifications (id, incident_id, event_seq, webhook, kind, state, attempts, next_at, lease_until, lease_holder,
                           last_error, created_at, finished_at)
SELECT id, incident_id, event_seq, webhook, kind, state, attempts, next_at, lease_until, lease_holder,
       last_error, created_at, finished_at
FROM notifications_copy;
DROP TABLE notifications_copy;
CREATE INDEX notifications_due ON notifications (next_at) WHERE state = 'pending';
