-- Cases the agents report, incidents with their timelines, and the webhook notifications they send.
-- Text a node sent (case summaries, notes, the reason it distrusts the plane) is stored as given,
-- after the plane has capped it; it is shown as text and never interpreted.

-- Why the node could not verify the plane's statement, as its last claim said ('' when it could).
ALTER TABLE nodes ADD COLUMN untrusted TEXT NOT NULL DEFAULT '';

-- A case is one escalation of one recipe on one node, numbered by the node.
CREATE TABLE cases (
    node_id     TEXT NOT NULL REFERENCES nodes (id),
    case_id     INTEGER NOT NULL CHECK (case_id > 0),
    recipe      TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('open', 'closed')),
    opened_at   INTEGER NOT NULL,
    closed_at   INTEGER,
    closed_by   TEXT NOT NULL DEFAULT '' CHECK (closed_by IN ('', 'node', 'plane')),
    summary     TEXT NOT NULL,
    body        TEXT,
    received_at INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (node_id, case_id)
) STRICT;
-- One open case per recipe per node, held by the schema as well as by intake's rules.
CREATE UNIQUE INDEX cases_one_open ON cases (node_id, recipe) WHERE state = 'open';
CREATE INDEX cases_recipe ON cases (node_id, recipe, case_id);

CREATE TABLE case_notes (
    node_id     TEXT NOT NULL,
    case_id     INTEGER NOT NULL,
    author      TEXT NOT NULL CHECK (author IN ('node', 'plane')),
    seq         INTEGER NOT NULL CHECK (seq > 0),
    at          INTEGER NOT NULL,
    text        TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (node_id, case_id, author, seq),
    FOREIGN KEY (node_id, case_id) REFERENCES cases (node_id, case_id)
) STRICT, WITHOUT ROWID;

-- An incident is one condition (source) on one node: whether it still happens (condition) and what a
-- person decided (triage) are separate columns.
CREATE TABLE incidents (
    id            TEXT PRIMARY KEY,
    node_id       TEXT NOT NULL REFERENCES nodes (id),
    source        TEXT NOT NULL,
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
-- One open incident per condition per node.
CREATE UNIQUE INDEX incidents_one_open ON incidents (node_id, source) WHERE condition = 'open';
CREATE INDEX incidents_condition ON incidents (node_id, source, id);
CREATE INDEX incidents_open_source ON incidents (source) WHERE condition = 'open';
CREATE INDEX incidents_needs_you ON incidents (id) WHERE triage IN ('new', 'snoozed');

CREATE TABLE incident_events (
    incident_id   TEXT NOT NULL REFERENCES incidents (id),
    seq           INTEGER NOT NULL CHECK (seq > 0),
    at            INTEGER NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('opened', 'cleared', 'reopened', 'triage', 'note')),
    actor         TEXT NOT NULL,
    triage        TEXT NOT NULL DEFAULT '',
    snoozed_until INTEGER,
    text          TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (incident_id, seq)
) STRICT, WITHOUT ROWID;

-- One notification per webhook per opened or reopened event, written in the transaction that wrote the
-- event (an outbox), delivered under a lease.
CREATE TABLE notifications (
    id           TEXT PRIMARY KEY,
    incident_id  TEXT NOT NULL REFERENCES incidents (id),
    event_seq    INTEGER NOT NULL,
    webhook      TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('opened', 'reopened')),
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
CREATE INDEX notifications_due ON notifications (next_at) WHERE state = 'pending';

-- Every delivery attempt, written before it is made and completed after.
CREATE TABLE notification_attempts (
    notification_id TEXT NOT NULL REFERENCES notifications (id),
    attempt         INTEGER NOT NULL CHECK (attempt > 0),
    at              INTEGER NOT NULL,
    holder          TEXT NOT NULL,
    status          INTEGER NOT NULL DEFAULT 0,
    error           TEXT NOT NULL DEFAULT '',
    duration_ms     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (notification_id, attempt)
) STRICT, WITHOUT ROWID;

-- The detectors count refused and lost jobs of the last hour.
CREATE INDEX jobs_finished ON jobs (state, finished_at) WHERE state IN ('refused', 'lost');
